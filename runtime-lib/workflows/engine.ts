// Runs a workflow's steps for one job, as the actor who submitted it. What each step type does is
// written once (step-types.ts); here is how a workflow runs them. A transactional workflow runs its
// database steps (query, command) as one unit of work: they commit or roll back together. Its
// steps that reach outside the database (notify, email, webhook, plugin, service, delay) cannot be
// rolled back, and a delay must not hold the transaction open: those run after the commit, in
// their order (the validator refuses a database step that reads their results). Flow steps
// (condition, loop) run where they stand, their database steps in the transaction. Elsewhere each
// step commits on its own, in order.

import { AppError } from '../core/errors.ts';
import type { CommandRuntime, CommandSpec } from '../commands/executor.ts';
import type { Database, Work } from '../data/database.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import type { ActiveTrace } from '../observe/tracing.ts';
import type { Notification, PluginAction } from '../commands/workflow-contract.ts';
import type { ClaimedJob } from './jobs.ts';
import type { ServiceSpec } from './services.ts';
import { valueHolds } from './step-condition.ts';
import { type PlacedStep, type Scope, type StepEnv, stepType, type StepType } from './step-types.ts';
import { define, lookup } from './templates.ts';

/** Steps one job runs at most, loops unrolled: nested loops cannot multiply past it. */
export const MAX_JOB_STEPS = 10_000;

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
  precondition?: Readonly<Record<string, unknown>>;
  transactional: boolean;
  /** Runs in all, for failures a retry can fix (the database busy or unreachable). */
  retries: number;
  maxConcurrent: number;
  steps: readonly StepSpec[];
}

export interface WorkflowRuntime {
  db: Database;
  stores: ReadonlyMap<string, EntityStore>;
  /** By command name, as steps name them. */
  commands: ReadonlyMap<string, CommandSpec>;
  commandRuntime: CommandRuntime;
  /** Sends a notify step's message through its adapter (the blueprint's default when it names none). */
  notify(message: Notification, signal?: AbortSignal): Promise<void>;
  defaultAdapter?: string;
  /** The first adapter of type `email`: where email steps go (else the default adapter). */
  emailAdapter?: string;
  /** Plugin step actions by plugin and action name, from src/extend.ts. */
  plugins: Readonly<Record<string, Readonly<Record<string, PluginAction>>>>;
  /** Production: webhook steps may not reach loopback, private or reserved addresses. */
  blockPrivateTargets: boolean;
  /** The blueprint's [service.*] declarations, by name, and their implementations (src/extend.ts `services`). */
  services: ReadonlyMap<string, ServiceSpec>;
  serviceImplementations: Readonly<Record<string, unknown>>;
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
    if (!valueHolds(actual, expected)) return [path, expected, actual];
  }
  return undefined;
}

/** Whether every path of the condition holds its value (a list: any of them). */
export function conditionHolds(condition: Readonly<Record<string, unknown>>, context: unknown): boolean {
  return firstMismatch(condition, context) === undefined;
}

/** Refuses (409 WORKFLOW_PRECONDITION_FAILED) unless every path of the precondition holds its value. */
export function checkPrecondition(spec: WorkflowSpec, context: unknown): void {
  const mismatch = firstMismatch(spec.precondition ?? {}, context);
  if (!mismatch) return;
  const [path, expected, actual] = mismatch;
  throw new AppError(
    'WORKFLOW_PRECONDITION_FAILED',
    `${spec.name} needs ${path} to be ${JSON.stringify(expected)}; it is ${JSON.stringify(actual ?? null)}`,
  );
}

/** Runs every step for `job`; resolves to what its steps stored with assignTo (the job's result). */
export async function runWorkflow(
  rt: WorkflowRuntime,
  spec: WorkflowSpec,
  job: ClaimedJob,
  trace?: ActiveTrace,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const context = runContext(job.data);
  const variables = context.variables as Record<string, unknown>;
  const assigned: Record<string, unknown> = {};
  const top: Scope = {
    context,
    assign: (step, value) => {
      for (const target of [variables, assigned]) define(target, step.assignTo, value);
    },
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
  const steps = new Steps({ rt, workflow: spec, job, ctx, signal });
  const placed = spec.steps.map((step, i) => ({
    step,
    at: `steps.${i}`,
    scope: top,
    settle: (value: unknown) => top.assign(step, value),
  }));

  try {
    if (spec.transactional) {
      const later: PlacedStep[] = [];
      await rt.db.write(function* () {
        later.length = 0;
        yield* steps.inTransaction(placed, later);
      }, trace);
      steps.tookEffect = true;
      for (const step of later) step.settle(await steps.outside(step));
    } else {
      await steps.alone(placed);
    }
    return assigned;
  } catch (err) {
    // The runner runs a job again, from its first step, after a failure a retry can fix: unless a
    // step has already taken effect (committed, sent), which running again would repeat.
    if (!(err instanceof AppError) || !err.retryable || !steps.tookEffect) throw err;
    const message = `${err.message}; earlier steps had taken effect, so the job is not run again`;
    throw new AppError(err.code, message, { details: err.details, cause: err, retryable: false });
  }
}

/** The step types a transactional workflow runs in its transaction: all but those that act outside it. */
type InTransaction = Extract<StepType, { kind: 'database' | 'flow' }>;

/** The two ways of running steps, each over the one definition of every step type (step-types.ts). */
class Steps {
  private ran = 0;
  /** Whether a step took effect (committed, or acted outside the app): a run past it is not repeated. */
  tookEffect = false;

  constructor(private readonly env: StepEnv) {}

  /** Steps inside the workflow's transaction; those that act outside it are kept in `later`. */
  *inTransaction(steps: readonly PlacedStep[], later: PlacedStep[]): Work<void> {
    for (const placed of steps) {
      const type = stepType(placed.step);
      if (type?.kind === 'outside') later.push(placed);
      else placed.settle(yield* this.oneInTransaction(placed, type, later));
    }
  }

  private *oneInTransaction(placed: PlacedStep, type: InTransaction | undefined, later: PlacedStep[]): Work<unknown> {
    this.count();
    const { step, at, scope } = placed;
    if (type === undefined) throw notSupported(step);
    if (type.kind === 'flow') {
      const flow = type.expand(step, at, scope);
      yield* this.inTransaction(flow.steps, later);
      return flow.value;
    }
    const unit = type.prepare(this.env, step, scope.context);
    if ('commitsAlone' in unit) {
      throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `${unit.what}: it cannot join a transaction`);
    }
    return yield* unit.work();
  }

  /** Steps that commit each on its own, in order. */
  async alone(steps: readonly PlacedStep[]): Promise<void> {
    for (const placed of steps) {
      const type = stepType(placed.step);
      const value = await this.oneAlone(placed, type);
      if (type?.takesEffect(placed.step)) this.tookEffect = true;
      placed.settle(value);
    }
  }

  private async oneAlone(placed: PlacedStep, type: StepType | undefined): Promise<unknown> {
    if (type?.kind === 'outside') return this.outside(placed);
    this.count();
    const { step, at, scope } = placed;
    if (type === undefined) throw notSupported(step);
    if (type.kind === 'flow') {
      const flow = type.expand(step, at, scope);
      await this.alone(flow.steps);
      return flow.value;
    }
    const unit = type.prepare(this.env, step, scope.context);
    if ('commitsAlone' in unit) return unit.commitsAlone();
    return this.env.rt.db.write(unit.work, this.env.ctx.trace);
  }

  /** A step that acts outside the database; resolves to what it stores with assignTo. */
  async outside({ step, at, scope }: PlacedStep): Promise<unknown> {
    this.count();
    const type = stepType(step);
    if (type?.kind !== 'outside') throw notSupported(step);
    return type.act(this.env, step, at, scope.context);
  }

  /** Fails the job once it has run more steps than any sound workflow needs (loops in loops). */
  private count(): void {
    if (++this.ran > MAX_JOB_STEPS) {
      throw new AppError('WORKFLOW_LIMIT_EXCEEDED', `a job runs at most ${MAX_JOB_STEPS} steps, loops unrolled`);
    }
  }
}

function notSupported(step: StepSpec): AppError {
  return new AppError(
    'WORKFLOW_STEP_NOT_SUPPORTED',
    `${step.name ? `step "${step.name}": ` : ''}${step.type} steps do not run in this version of the app`,
  );
}
