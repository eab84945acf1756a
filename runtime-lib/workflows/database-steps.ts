// The steps that read and write the app's records, through the same code as the API: a query step
// is an entity create, update, delete or find with its access rules and validation (a
// command-only field is PROTECTED_FIELD_MUTATION), a command step is the one command executor. An
// agent gets nothing through a workflow that it could not get through the entity and command
// routes. Each is a unit of work, which the engine runs in the workflow's transaction or alone.

import { AppError } from '../core/errors.ts';
import { admitCommand, declarativeCommand, executeCommand } from '../commands/executor.ts';
import type { Work } from '../data/database.ts';
import type { StepSpec } from './engine.ts';
import { same } from './step-condition.ts';
import type { DatabaseWork, StepEnv } from './step-types.ts';
import { resolveTemplates } from './templates.ts';

/** A query step: its templates are resolved as the unit runs. */
export function queryStep(env: StepEnv, step: StepSpec, context: Record<string, unknown>): DatabaseWork {
  return { work: () => query(env, step, context) };
}

/**
 * A command step, its command found and its input admitted now. A command with a handler commits
 * on its own (the executor's transaction): it cannot join a workflow's.
 */
export function commandStep(env: StepEnv, step: StepSpec, context: Record<string, unknown>): DatabaseWork {
  const { rt, ctx } = env;
  const spec = rt.commands.get(String(step.command));
  if (!spec) throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `no command ${String(step.command)}`);
  const recordId = String(resolveTemplates(step.recordId, context));
  const raw = resolveTemplates(step.input ?? {}, context);
  const input = admitCommand(spec, ctx.actor, raw);
  const call = { ...ctx, recordId, input: raw };
  if (spec.handler) {
    const commitsAlone = async () => (await executeCommand(rt.commandRuntime, spec, { ...call, input })).body;
    return { commitsAlone, what: `${spec.name} has a handler` };
  }
  return { work: () => declarativeCommand(rt.commandRuntime, spec, call, input) };
}

function* query(env: StepEnv, step: StepSpec, context: unknown): Work<unknown> {
  const store = env.rt.stores.get(String(step.entity));
  if (!store) throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `no entity ${String(step.entity)}`);
  const { ctx } = env;
  const data = resolveTemplates(step.data ?? {}, context);
  // `where` may also be the record's id itself, as in Zebric.
  const resolved = resolveTemplates(step.where ?? {}, context);
  const where = (
    typeof resolved === 'string' || typeof resolved === 'number' ? { [store.spec.primaryKey]: resolved } : resolved
  ) as Record<string, unknown>;
  switch (step.action) {
    case 'create':
      return yield* store.create(ctx, data);
    case 'find': {
      const filters = Object.entries(where).map(([field, value]) => ({ field, value }));
      return (yield* store.list(ctx, { limit: 1000, offset: 0, where: filters })).items;
    }
    case 'update':
    case 'delete': {
      // The record by its id; the other keys of `where` are the state it must be in (else
      // STATE_CONFLICT: the record changed since the job was submitted).
      const key = store.spec.primaryKey;
      const { [key]: id, ...expected } = where;
      if (id === undefined || id === null)
        throw new AppError('VALIDATION_FAILED', `a ${step.action} step needs where.${key}, the record's id`);
      const current = yield* store.load(ctx, String(id), store.access.filter(ctx.actor, 'read'), { lock: true });
      // Whether the job fails would tell the value of a field the actor may not read.
      const hidden = store.access.hiddenFields(ctx.actor, current).filter((f) => Object.hasOwn(expected, f));
      if (hidden.length) throw store.access.fieldReadRefusal(ctx.actor, hidden, 'compare');
      const changed = Object.entries(expected).filter(([field, value]) => !same(current[field], value));
      if (changed.length) {
        throw new AppError(
          'STATE_CONFLICT',
          `${store.spec.name} ${String(id)} no longer has ` +
            changed.map(([f, v]) => `${f} = ${JSON.stringify(v)}`).join(', '),
        );
      }
      if (step.action === 'update') return yield* store.update(ctx, String(id), data);
      yield* store.delete(ctx, String(id));
      return { deleted: true };
    }
    default:
      throw new AppError(
        'WORKFLOW_STEP_NOT_SUPPORTED',
        `query action "${String(step.action)}" is not create, update, delete or find`,
      );
  }
}
