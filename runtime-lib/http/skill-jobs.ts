// Skill actions that start a workflow (the rest of the skill routes: http/skill-routes.ts). An app
// with workflows hands skillJobs to skillActions; one without them does not import this module, nor
// through it the workflow engine.
//
// A workflow action checks its body against its declared `body` (the keys its workflow reads are
// required), loads the record its path names, checks the workflow's precondition (409
// WORKFLOW_PRECONDITION_FAILED), stores a job and answers 202 with it: `{ success, job }`, the job
// as GET /api/jobs/<id> answers it. The same Idempotency-Key and body replay the same 202 and job,
// whatever the record has become since. Whoever submitted it polls GET /api/jobs/<id>.

import { isAuthenticated } from '../core/actor.ts';
import { type ErrorDetail } from '../core/errors.ts';
import { ulid } from '../core/ids.ts';
import { pathParams } from '../core/path-params.ts';
import type { FieldType } from '../core/values.ts';
import type { EntityStore } from '../data/entity-store.ts';
import { checkBody, normalizeValue, type Row, validationError } from '../data/fields.ts';
import { idempotencyScope, runIdempotent } from '../data/idempotency.ts';
import type { IdempotencyStore } from '../data/idempotency-store.ts';
import { checkPrecondition, runContext, type WorkflowSpec } from '../workflows/engine.ts';
import { insertJob, type JobStore } from '../workflows/jobs.ts';
import { admitCaller, type Run, type SkillActionSpec, type SkillSpec, type SkillWorkflows } from './skill-routes.ts';

/** The jobs workflow actions submit, and who runs them. */
export interface SkillJobs {
  specs: ReadonlyMap<string, WorkflowSpec>;
  jobs: JobStore;
  /** Told when a job was submitted, so that it starts at once. */
  submitted(): void;
}

/** Workflow actions for skillActions: they store their jobs in `jobs`. */
export function skillJobs(jobs: SkillJobs): SkillWorkflows {
  return {
    // A workflow started by entity events is not started by hand.
    startable: (name) => {
      const spec = jobs.specs.get(name);
      return spec !== undefined && spec.trigger?.kind !== 'entity';
    },
    action: (skill, action, store, idempotency) => workflowAction(skill, action, store, idempotency, jobs),
  };
}

/**
 * A workflow action: under the request's Idempotency-Key, the body checked against the declared
 * `body` (types; unknown keys refused; the keys the workflow reads required), the record its path
 * names loaded as the caller may read it (404 otherwise), the precondition, then a job stored and
 * answered 202, all in one unit of work.
 *
 * The key answers first: the checks run inside runIdempotent's write, and any failure there is
 * answered by the key when it already holds an answer. So the same request replays its 202 and
 * job even once that job has changed the record (a precondition that no longer holds), however
 * many are sent at once, and another body under the key is IDEMPOTENCY_KEY_REUSE, whatever it is.
 */
function workflowAction(
  skill: SkillSpec,
  action: SkillActionSpec,
  store: EntityStore | undefined,
  idempotency: IdempotencyStore,
  jobs: SkillJobs,
): Run {
  const spec = jobs.specs.get(action.workflow as string) as WorkflowSpec;
  const operation = `skill:${skill.name}.${action.name}`;
  const paramNames = pathParams(action.path);
  const key = store?.spec.primaryKey;
  const idParam = key === undefined ? undefined : paramNames.find((p) => (action.mapParams?.[p] ?? p) === key);
  const takesBody = action.method !== 'GET';
  return async (call) => {
    admitCaller(skill, action, call.actor);
    const params = { ...call.params };
    const ctx = call.context({ mutation: true });
    const { actor } = ctx;
    const recordId = idParam === undefined ? undefined : params[idParam];
    // An anonymous caller's job belongs to nobody who could ask for it again.
    const owner = isAuthenticated(actor) ? idempotencyScope(actor) : `anonymous:${ulid()}`;
    // The request as sent: a body the checks would refuse is another input under the key too.
    const input = { params, body: takesBody ? (call.body ?? {}) : {} };
    const result = await runIdempotent(idempotency, ctx, operation, input, noop, function* () {
      const body = takesBody ? checkWorkflowBody(action, call.body) : {};
      const record = store && recordId !== undefined ? yield* store.get(ctx, recordId) : null;
      const data = {
        params,
        body,
        payload: body,
        entity: action.entity ?? null,
        recordId: recordId ?? null,
        record,
        attribution: { runId: ctx.agentRunId ?? null, agentId: actor.kind === 'agent' ? actor.id : null },
      };
      checkPrecondition(spec, runContext(data));
      // The job as GET /api/jobs/<id> answers it now (the WorkflowJob of the OpenAPI document).
      const job = yield* insertJob(spec.name, owner, actor, data, ctx.trace);
      return { status: 202, body: { success: true, job }, location: job.url };
    });
    if (!result.replayed) jobs.submitted();
    return result;
  };
}

function noop(): void {}

/**
 * The body of a workflow action: a JSON object of the declared keys, each of its declared type,
 * with every key the workflow reads (`requiredBody`) present, not null and, for text, not blank.
 */
function checkWorkflowBody(action: SkillActionSpec, raw: unknown): Row {
  const body = checkBody(raw ?? {});
  const issues: ErrorDetail[] = [];
  const out: Row = {};
  for (const [name, value] of Object.entries(body)) {
    const type = action.body?.[name] as FieldType | undefined;
    if (type === undefined) {
      issues.push({ field: name, code: 'UNKNOWN_FIELD', message: `${action.name} takes no "${name}"` });
      continue;
    }
    if (value === null) continue;
    // A key the workflow reads is required as a field is: text of it must not be blank either.
    out[name] = normalizeValue({ name, type, required: action.requiredBody?.includes(name) }, value, issues);
  }
  for (const name of action.requiredBody ?? []) {
    if (Object.hasOwn(body, name) && body[name] !== null) continue;
    const message = `${name} is required: ${action.workflow as string} reads it`;
    issues.push({ field: name, code: 'REQUIRED', message });
  }
  if (issues.length) throw validationError(issues);
  return out;
}
