// Workflows started from pages (an action bar's button, a board's move, a widget event): stored as
// jobs of the signed-in actor with the checks a skill action's job makes (http/skill-jobs.ts): the
// workflow is one a caller may start (not one its entity events start), someone is signed in, the
// precondition holds; then the job is stored and the runner told. An app with workflows hands this
// to the page router; one without them does not import it, nor through it the workflow engine.

import { isAuthenticated } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import type { Work } from '../data/database.ts';
import type { RequestContext } from '../data/entity-store.ts';
import { idempotencyScope } from '../data/idempotency.ts';
import type { SkillJobs } from '../http/skill-jobs.ts';
import { checkPrecondition, runContext } from '../workflows/engine.ts';
import { insertJob } from '../workflows/jobs.ts';
import type { PageWorkflows } from './page-spec.ts';

export function pageWorkflows(jobs: SkillJobs): PageWorkflows {
  return {
    async submit(ctx: RequestContext, workflow: string, prepare: () => Work<Record<string, unknown>>): Promise<void> {
      const spec = jobs.specs.get(workflow);
      // The generator checked the name; a workflow its entity events start is not started by hand.
      if (!spec || spec.trigger?.kind === 'entity')
        throw new AppError('FORBIDDEN', `${workflow} is not started from a page`);
      const { actor } = ctx;
      // The job is its submitter's to follow (GET /api/jobs/<id>): nobody signed in is nobody's.
      if (!isAuthenticated(actor)) throw new AppError('UNAUTHENTICATED', `sign in to start ${workflow}`);
      await jobs.jobs.db.write(function* () {
        const data = yield* prepare();
        checkPrecondition(spec, runContext(data));
        yield* insertJob(spec.name, idempotencyScope(actor), actor, data, ctx.trace);
      }, ctx.trace);
      jobs.submitted();
    },
  };
}
