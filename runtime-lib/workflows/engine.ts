// Runs a workflow's steps for one job (spec 2.7, 3). Steps run as the actor who submitted the job,
// through the same code as the API: a query step is an entity create, update, delete or find with
// its access rules and validation (a command-only field is PROTECTED_FIELD_MUTATION), a command
// step is the one command executor. An agent gets nothing through a workflow that it could not get
// through the entity and command routes.
//
// A transactional workflow runs its query and command steps as one unit of work: they commit or
// roll back together. Its notify steps, which cannot be rolled back, are sent after the commit.
// Elsewhere each step commits on its own, in order.

import type { Actor } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import {
  admitCommand,
  type CommandRuntime,
  type CommandSpec,
  declarativeCommand,
  executeCommand,
} from '../commands/executor.ts';
import type { Database, Work } from '../data/database.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import type { ActiveTrace } from '../observe/tracing.ts';
import type { ClaimedJob } from './jobs.ts';
import { lookup, resolveTemplates } from './templates.ts';

/** A step as the blueprint wrote it: its type, an optional name and assignTo, and its own keys. */
export type StepSpec = Readonly<Record<string, unknown>> & { type: string; name?: string; assignTo?: string };

/**
 * How a workflow starts: by hand (a skill action), when records of an entity change, when a caller
 * posts to its webhook route (http/webhook-routes.ts), or on a cron schedule (schedules.ts).
 */
export type WorkflowTrigger =
  | { kind: 'manual' }
  | {
      kind: 'entity';
      entity: string;
      event: 'create' | 'update' | 'delete';
      /** `before.<field>` / `after.<field>` -> the value it must hold. */
      condition: Readonly<Record<string, unknown>>;
    }
  | {
      kind: 'webhook';
      route: string;
      /** The environment variable holding the secret a caller must prove it knows. */
      secretEnv?: string;
    }
  | { kind: 'schedule'; cron: string };

export interface WorkflowSpec {
  name: string;
  description?: string;
  trigger?: WorkflowTrigger;
  /** Context path -> the value it must hold when the job is submitted. */
  precondition: Readonly<Record<string, unknown>>;
  transactional: boolean;
  /** Runs in all, for failures a retry can fix (the database busy or unreachable). */
  retries: number;
  maxConcurrent: number;
  steps: readonly StepSpec[];
}

/** A message of a notify step, as an adapter receives it. */
export interface Notification {
  adapter: string;
  channel?: string;
  to?: string;
  subject?: string;
  body: string;
  workflow: string;
  jobId: string;
}

export interface WorkflowRuntime {
  db: Database;
  stores: ReadonlyMap<string, EntityStore>;
  /** By command name, as steps name them. */
  commands: ReadonlyMap<string, CommandSpec>;
  commandRuntime: CommandRuntime;
  /** Sends a notify step's message through its adapter (the blueprint's default when it names none). */
  notify(message: Notification): Promise<void>;
  defaultAdapter?: string;
}

/**
 * The context templates and preconditions read. A job submitted by a skill action has
 * `variables.data` (record, payload, params, attribution); one started by an entity event has
 * `trigger.before` and `trigger.after` (also as `variables.before` and `variables.after`); one
 * started by a webhook has `webhook.body`, `webhook.headers` and `webhook.query` (also under
 * `trigger`); one started by its schedule has `trigger.tick`, the instant it was due.
 */
export function runContext(data: Record<string, unknown>): Record<string, unknown> {
  if (data.kind === 'entity') {
    const { entity, event, before, after } = data;
    return { trigger: { type: 'entity', entity, event, before, after }, variables: { entity, event, before, after } };
  }
  if (data.kind === 'webhook') {
    const webhook = { body: data.body, headers: data.headers, query: data.query };
    return { webhook, trigger: { type: 'webhook', ...webhook }, variables: {} };
  }
  if (data.kind === 'schedule') {
    return { trigger: { type: 'schedule', tick: data.tick }, variables: { tick: data.tick } };
  }
  return { variables: { data }, trigger: { type: 'manual', data } };
}

/** The first path of `condition` whose value is not the one it needs, or undefined when all hold. */
function firstMismatch(
  condition: Readonly<Record<string, unknown>>,
  context: unknown,
): [path: string, expected: unknown, actual: unknown] | undefined {
  for (const [path, expected] of Object.entries(condition)) {
    let actual: unknown;
    try {
      actual = lookup(context, path);
    } catch {
      actual = undefined;
    }
    const holds = Array.isArray(expected) ? expected.some((e) => same(actual, e)) : same(actual, expected);
    if (!holds) return [path, expected, actual];
  }
  return undefined;
}

/** Whether every path of the condition holds its value (a list: any of them). */
export function conditionHolds(condition: Readonly<Record<string, unknown>>, context: unknown): boolean {
  return firstMismatch(condition, context) === undefined;
}

/** Refuses (409 WORKFLOW_PRECONDITION_FAILED) unless every path of the precondition holds its value. */
export function checkPrecondition(spec: WorkflowSpec, context: unknown): void {
  const mismatch = firstMismatch(spec.precondition, context);
  if (!mismatch) return;
  const [path, expected, actual] = mismatch;
  throw new AppError(
    'WORKFLOW_PRECONDITION_FAILED',
    `${spec.name} needs ${path} to be ${JSON.stringify(expected)}; it is ${JSON.stringify(actual ?? null)}`,
  );
}

function same(actual: unknown, expected: unknown): boolean {
  if (actual === undefined || actual === null || expected === null) return (actual ?? null) === expected;
  if (typeof actual === 'object') return JSON.stringify(actual) === JSON.stringify(expected);
  return String(actual) === String(expected);
}

/** Runs every step for `job`; resolves to what its steps stored with assignTo (the job's result). */
export async function runWorkflow(
  rt: WorkflowRuntime,
  spec: WorkflowSpec,
  job: ClaimedJob,
  trace?: ActiveTrace,
): Promise<Record<string, unknown>> {
  const context = runContext(job.data);
  const variables = context.variables as Record<string, unknown>;
  const assigned: Record<string, unknown> = {};
  const assign = (step: StepSpec, value: unknown) => {
    if (typeof step.assignTo !== 'string' || value === undefined) return;
    for (const target of [variables, assigned]) {
      Object.defineProperty(target, step.assignTo, { value, enumerable: true, writable: true, configurable: true });
    }
  };
  const attribution = (job.data.attribution ?? {}) as { runId?: unknown };
  const chain = Array.isArray(job.data.chain) ? (job.data.chain as string[]) : [];
  const ctx: RequestContext = {
    actor: job.actor,
    trace,
    agentRunId: typeof attribution.runId === 'string' ? attribution.runId : undefined,
    // Changes this job makes may start workflows in turn: the chain stops them past a depth.
    workflowChain: [...chain, spec.name],
  };
  const steps = new Steps(rt, spec, job, ctx);

  if (spec.transactional) {
    const later: StepSpec[] = [];
    await rt.db.write(function* () {
      for (const step of spec.steps) {
        // Sent once the transaction has committed: a message cannot be taken back.
        if (step.type === 'notify') later.push(step);
        else assign(step, yield* steps.inTransaction(step, context));
      }
    }, trace);
    for (const step of later) await steps.notify(step, context);
    return assigned;
  }
  for (const step of spec.steps) {
    if (step.type === 'notify') await steps.notify(step, context);
    else assign(step, await steps.alone(step, context));
  }
  return assigned;
}

class Steps {
  constructor(
    private readonly rt: WorkflowRuntime,
    private readonly spec: WorkflowSpec,
    private readonly job: ClaimedJob,
    private readonly ctx: RequestContext,
  ) {}

  /** A database step inside the workflow's transaction. */
  *inTransaction(step: StepSpec, context: unknown): Work<unknown> {
    if (step.type === 'query') return yield* this.query(step, context);
    if (step.type === 'command') {
      const { spec, call, input } = this.command(step, context);
      if (spec.handler)
        throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `${spec.name} has a handler: it cannot join a transaction`);
      return yield* declarativeCommand(this.rt.commandRuntime, spec, call, input);
    }
    throw notSupported(step);
  }

  /** A step that commits on its own. */
  async alone(step: StepSpec, context: unknown): Promise<unknown> {
    if (step.type === 'query') return this.rt.db.write(() => this.query(step, context), this.ctx.trace);
    if (step.type === 'command') {
      const { spec, call, input } = this.command(step, context);
      if (spec.handler) return (await executeCommand(this.rt.commandRuntime, spec, { ...call, input })).body;
      return this.rt.db.write(() => declarativeCommand(this.rt.commandRuntime, spec, call, input), this.ctx.trace);
    }
    throw notSupported(step);
  }

  async notify(step: StepSpec, context: unknown): Promise<void> {
    const text = (key: string): string | undefined => {
      const value = step[key] === undefined ? undefined : resolveTemplates(step[key], context);
      if (value === undefined || value === null) return undefined;
      return typeof value === 'string' ? value : JSON.stringify(value);
    };
    const adapter = text('adapter') ?? this.rt.defaultAdapter;
    if (adapter === undefined) throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', 'a notify step names no adapter');
    await this.rt.notify({
      adapter,
      channel: text('channel'),
      to: text('to'),
      subject: text('subject'),
      // `message` is read as the body it means (Zebric drops it).
      body: text('body') ?? text('message') ?? '',
      workflow: this.spec.name,
      jobId: this.job.id,
    });
  }

  private *query(step: StepSpec, context: unknown): Work<unknown> {
    const store = this.rt.stores.get(String(step.entity));
    if (!store) throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `no entity ${String(step.entity)}`);
    const { ctx } = this;
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

  private command(step: StepSpec, context: unknown): CommandStep {
    const spec = this.rt.commands.get(String(step.command));
    if (!spec) throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `no command ${String(step.command)}`);
    const recordId = String(resolveTemplates(step.recordId, context));
    const raw = resolveTemplates(step.input ?? {}, context);
    const input = admitCommand(spec, this.ctx.actor as Actor, raw);
    return { spec, call: { ...this.ctx, recordId, input: raw }, input };
  }
}

/** A command step resolved: the command, its call as the executor takes it, and the admitted input. */
interface CommandStep {
  spec: CommandSpec;
  call: RequestContext & { recordId: string; input: unknown };
  input: Record<string, unknown>;
}

function notSupported(step: StepSpec): AppError {
  return new AppError(
    'WORKFLOW_STEP_NOT_SUPPORTED',
    `${step.name ? `step "${step.name}": ` : ''}${step.type} steps do not run in this version of the app`,
  );
}

