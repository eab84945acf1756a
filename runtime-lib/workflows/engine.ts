// Runs a workflow's steps for one job. Steps run as the actor who submitted the job,
// through the same code as the API: a query step is an entity create, update, delete or find with
// its access rules and validation (a command-only field is PROTECTED_FIELD_MUTATION), a command
// step is the one command executor. An agent gets nothing through a workflow that it could not get
// through the entity and command routes.
//
// A transactional workflow runs its query and command steps as one unit of work: they commit or
// roll back together. Its steps that reach outside the database (notify, email, webhook, plugin)
// cannot be rolled back, and a delay must not hold the transaction open: those run after the
// commit, in their order (the validator refuses a database step that reads their results).
// Condition and loop steps run where they stand, their database steps in the transaction.
// Elsewhere each step commits on its own, in order.

import { createHash } from 'node:crypto';
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
import type { Notification, PluginAction } from '../commands/workflow-contract.ts';
import type { ClaimedJob } from './jobs.ts';
import { callService, type ServiceSpec } from './services.ts';
import { ifHolds, same, valueHolds } from './step-condition.ts';
import { lookup, resolveTemplates, setOwn } from './templates.ts';
import { deliverWebhook, pause, WEBHOOK_METHODS } from './webhook.ts';

/** Items one loop step goes over at most. */
export const MAX_LOOP_ITEMS = 1000;
/** Steps one job runs at most, loops unrolled: nested loops cannot multiply past it. */
export const MAX_JOB_STEPS = 10_000;
/**
 * The longest delay step. A waiting job keeps its lease (the runner renews it) and its place
 * under maxConcurrent; past a few minutes a schedule is the tool, not a job that sleeps.
 */
export const MAX_DELAY_MS = 5 * 60_000;

/** Steps that act outside the database: in a transactional workflow they run after the commit. */
const AFTER_COMMIT = new Set(['notify', 'email', 'webhook', 'plugin', 'service', 'delay']);
/** Steps whose success changes something (a query's find aside): a job is not run again past one. */
const TAKES_EFFECT = new Set(['query', 'command', 'notify', 'email', 'webhook', 'plugin', 'service']);

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
  notify(message: Notification): Promise<void>;
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
  const steps = new Steps(rt, spec, job, ctx, signal);

  try {
    if (spec.transactional) {
      const later: Deferred[] = [];
      await rt.db.write(function* () {
        later.length = 0;
        yield* steps.inTransaction(spec.steps, 'steps', top, later);
      }, trace);
      steps.tookEffect = true;
      for (const { step, at, scope, settle } of later) settle(await steps.outside(step, at, scope));
    } else {
      await steps.alone(spec.steps, 'steps', top);
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

/** Where steps read templates and store results: the run, or one iteration of a loop. */
interface Scope {
  context: Record<string, unknown>;
  assign(step: StepSpec, value: unknown): void;
}

/** A step of a transactional workflow kept for after the commit, and where its result goes. */
interface Deferred {
  step: StepSpec;
  at: string;
  scope: Scope;
  settle(value: unknown): void;
}

/** Sets `name` on `target` as its own property (a step named `__proto__` included), unless there is no value. */
function define(target: Record<string, unknown>, name: unknown, value: unknown): void {
  if (typeof name === 'string' && value !== undefined) setOwn(target, name, value);
}

class Steps {
  private ran = 0;
  /** Whether a step took effect (committed, or acted outside the app): a run past it is not repeated. */
  tookEffect = false;

  constructor(
    private readonly rt: WorkflowRuntime,
    private readonly spec: WorkflowSpec,
    private readonly job: ClaimedJob,
    private readonly ctx: RequestContext,
    private readonly signal?: AbortSignal,
  ) {}

  /** Steps inside the workflow's transaction; those that act outside it are kept in `later`. */
  *inTransaction(steps: readonly StepSpec[], at: string, scope: Scope, later: Deferred[]): Work<void> {
    for (const [i, step] of steps.entries()) {
      const where = `${at}.${i}`;
      if (AFTER_COMMIT.has(step.type)) later.push({ step, at: where, scope, settle: (v) => scope.assign(step, v) });
      else scope.assign(step, yield* this.oneInTransaction(step, where, scope, later));
    }
  }

  /** Steps that commit each on its own, in order. */
  async alone(steps: readonly StepSpec[], at: string, scope: Scope): Promise<void> {
    for (const [i, step] of steps.entries()) {
      scope.assign(step, await this.oneAlone(step, `${at}.${i}`, scope));
    }
  }

  private *oneInTransaction(step: StepSpec, at: string, scope: Scope, later: Deferred[]): Work<unknown> {
    this.count();
    switch (step.type) {
      case 'query':
        return yield* this.query(step, scope.context);
      case 'command': {
        const { spec, call, input } = this.command(step, scope.context);
        if (spec.handler)
          throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `${spec.name} has a handler: it cannot join a transaction`);
        return yield* declarativeCommand(this.rt.commandRuntime, spec, call, input);
      }
      case 'condition': {
        const [branch, steps] = this.branch(step, scope);
        yield* this.inTransaction(steps, `${at}.${branch}`, scope, later);
        return undefined;
      }
      case 'loop': {
        const body = stepList(step.do, 'do');
        const results: unknown[] = [];
        for (const [index, iteration] of this.iterations(step, scope).entries()) {
          for (const [j, sub] of body.entries()) {
            const where = `${at}[${index}].do.${j}`;
            const slot = results.push(null) - 1;
            const settle = (value: unknown) => {
              iteration.assign(sub, value);
              results[slot] = value ?? null;
            };
            if (AFTER_COMMIT.has(sub.type)) later.push({ step: sub, at: where, scope: iteration, settle });
            else settle(yield* this.oneInTransaction(sub, where, iteration, later));
          }
        }
        return results;
      }
      default:
        throw notSupported(step);
    }
  }

  private async oneAlone(step: StepSpec, at: string, scope: Scope): Promise<unknown> {
    const value = await this.runAlone(step, at, scope);
    if (TAKES_EFFECT.has(step.type) && step.action !== 'find') this.tookEffect = true;
    return value;
  }

  private async runAlone(step: StepSpec, at: string, scope: Scope): Promise<unknown> {
    if (AFTER_COMMIT.has(step.type)) return this.outside(step, at, scope);
    this.count();
    switch (step.type) {
      case 'query':
        return this.rt.db.write(() => this.query(step, scope.context), this.ctx.trace);
      case 'command': {
        const { spec, call, input } = this.command(step, scope.context);
        if (spec.handler) return (await executeCommand(this.rt.commandRuntime, spec, { ...call, input })).body;
        return this.rt.db.write(() => declarativeCommand(this.rt.commandRuntime, spec, call, input), this.ctx.trace);
      }
      case 'condition': {
        const [branch, steps] = this.branch(step, scope);
        await this.alone(steps, `${at}.${branch}`, scope);
        return undefined;
      }
      case 'loop': {
        const body = stepList(step.do, 'do');
        const results: unknown[] = [];
        for (const [index, iteration] of this.iterations(step, scope).entries()) {
          for (const [j, sub] of body.entries()) {
            const value = await this.oneAlone(sub, `${at}[${index}].do.${j}`, iteration);
            iteration.assign(sub, value);
            results.push(value ?? null);
          }
        }
        return results;
      }
      default:
        throw notSupported(step);
    }
  }

  /** A step that acts outside the database; resolves to what it stores with assignTo. */
  async outside(step: StepSpec, at: string, scope: Scope): Promise<unknown> {
    this.count();
    const { context } = scope;
    switch (step.type) {
      case 'notify':
        return this.notify(step, context);
      case 'email':
        return this.email(step, context);
      case 'webhook':
        return this.webhook(step, at, context);
      case 'plugin':
        return this.plugin(step, context);
      case 'service':
        return callService(this.rt.services, this.rt.serviceImplementations, {
          service: String(step.service),
          operation: String(step.operation),
          input: resolveTemplates(step.params ?? {}, context),
          ctx: { workflow: this.spec.name, jobId: this.job.id },
        });
      case 'delay':
        return pause(delayOf(step, context), this.signal);
      default:
        throw notSupported(step);
    }
  }

  /** Fails the job once it has run more steps than any sound workflow needs (loops in loops). */
  private count(): void {
    if (++this.ran > MAX_JOB_STEPS) {
      throw new AppError('WORKFLOW_LIMIT_EXCEEDED', `a job runs at most ${MAX_JOB_STEPS} steps, loops unrolled`);
    }
  }

  /** The branch of a condition step its `if` picks, and its steps (none when that branch is absent). */
  private branch(step: StepSpec, scope: Scope): ['then' | 'else', readonly StepSpec[]] {
    const branch = ifHolds(step.if, scope.context) ? 'then' : 'else';
    return [branch, stepList(step[branch], branch)];
  }

  /**
   * One scope per item of a loop step: the run's variables as they are, plus `variables.item` and
   * `variables.index` (Zebric's names). A result stored with assignTo in the body stays in its
   * iteration; the loop's own assignTo gets every body step's result, item after item.
   */
  private iterations(step: StepSpec, scope: Scope): Scope[] {
    // `items`: a list, a `{{ path }}` template, or a bare context path.
    const raw = step.items;
    const items =
      typeof raw === 'string' && !raw.includes('{{')
        ? lookup(scope.context, raw.trim())
        : resolveTemplates(raw, scope.context);
    if (!Array.isArray(items)) {
      const what = items === null ? 'null' : typeof items;
      throw new AppError('WORKFLOW_STEP_INVALID', `loop items must be a list; ${JSON.stringify(raw)} is ${what}`);
    }
    if (items.length > MAX_LOOP_ITEMS) {
      throw new AppError(
        'WORKFLOW_LIMIT_EXCEEDED',
        `a loop runs over at most ${MAX_LOOP_ITEMS} items; ${JSON.stringify(raw)} has ${items.length}`,
      );
    }
    const parent = scope.context.variables as Record<string, unknown>;
    return items.map((item: unknown, index) => {
      const variables: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(parent)) define(variables, name, value);
      define(variables, 'item', item ?? null);
      define(variables, 'index', index);
      return { context: { ...scope.context, variables }, assign: (s, value) => define(variables, s.assignTo, value) };
    });
  }

  private async notify(step: StepSpec, context: unknown): Promise<void> {
    const text = (key: string) => textOf(step, key, context);
    const adapter = text('adapter') ?? this.rt.defaultAdapter;
    if (adapter === undefined) throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', 'a notify step names no adapter');
    await this.rt.notify({
      adapter,
      channel: text('channel'),
      to: text('to'),
      subject: text('subject'),
      // `message` is read as the body it means (Zebric drops it).
      body: text('body') ?? text('message') ?? '',
      template: text('template'),
      workflow: this.spec.name,
      jobId: this.job.id,
    });
  }

  /** An email step: a notification with to, subject and body, through the email adapter (else the default). */
  private async email(step: StepSpec, context: unknown): Promise<void> {
    const adapter = this.rt.emailAdapter ?? this.rt.defaultAdapter;
    if (adapter === undefined) {
      throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', 'an email step needs an adapter of type email, or a default');
    }
    const to = textOf(step, 'to', context);
    const subject = textOf(step, 'subject', context);
    if (!to || !subject) throw new AppError('WORKFLOW_STEP_INVALID', 'an email step needs to and subject');
    await this.rt.notify({
      adapter,
      to,
      subject,
      body: textOf(step, 'body', context) ?? '',
      template: textOf(step, 'template', context),
      workflow: this.spec.name,
      jobId: this.job.id,
    });
  }

  /**
   * A webhook step. Every attempt of it, in this run or a later one of the same job, sends the same
   * Idempotency-Key: the job's id and the step's place (`steps.2`, `steps.1[3].do.0` in a loop).
   */
  private async webhook(step: StepSpec, at: string, context: unknown): Promise<unknown> {
    const url = textOf(step, 'url', context);
    if (!url) throw new AppError('WORKFLOW_STEP_INVALID', 'a webhook step needs url');
    const method = (textOf(step, 'method', context) ?? 'POST').toUpperCase();
    if (!(WEBHOOK_METHODS as readonly string[]).includes(method)) {
      throw new AppError('WORKFLOW_STEP_INVALID', `webhook method "${method}" is not ${WEBHOOK_METHODS.join(', ')}`);
    }
    const given = step.headers === undefined ? {} : resolveTemplates(step.headers, context);
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      throw new AppError('WORKFLOW_STEP_INVALID', 'webhook headers must be a table of names and values');
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(given)) {
      if (typeof value === 'object' && value !== null) {
        throw new AppError('WORKFLOW_STEP_INVALID', `webhook header "${name}" must be text`);
      }
      define(headers, name, String(value ?? ''));
    }
    // Zebric's webhook step sends `payload`; the format contract calls it `body`.
    const source = step.body !== undefined ? step.body : step.payload;
    const body = source === undefined ? undefined : resolveTemplates(source, context);
    if (body !== undefined && method === 'GET') {
      throw new AppError('WORKFLOW_STEP_INVALID', 'a GET webhook step has no body');
    }
    const idempotencyKey = createHash('sha256').update(`bp-webhook:${this.job.id}:${at}`).digest('hex').slice(0, 32);
    return deliverWebhook(
      { url, method, headers, body, idempotencyKey },
      { blockPrivate: this.rt.blockPrivateTargets, signal: this.signal },
    );
  }

  /** A plugin step: the action src/extend.ts registers as plugins.<plugin>.<action_name>, with the step's params. */
  private async plugin(step: StepSpec, context: Record<string, unknown>): Promise<unknown> {
    const name = String(step.plugin);
    const actionName = String(step.action_name);
    const plugin = Object.hasOwn(this.rt.plugins, name) ? this.rt.plugins[name] : undefined;
    const action = plugin && Object.hasOwn(plugin, actionName) ? plugin[actionName] : undefined;
    if (typeof action !== 'function') {
      throw new AppError(
        'WORKFLOW_STEP_NOT_SUPPORTED',
        `plugin action ${name}.${actionName} is not registered: add it to plugins in src/extend.ts`,
      );
    }
    const params = resolveTemplates(step.params ?? {}, context);
    // A copy: the action cannot change what later steps read.
    const { spec, job } = this;
    return action(params, { workflow: spec.name, jobId: job.id, actor: job.actor, context: structuredClone(context) });
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

/** A key of the step as text, its templates resolved; undefined when absent or null. */
function textOf(step: StepSpec, key: string, context: unknown): string | undefined {
  const value = step[key] === undefined ? undefined : resolveTemplates(step[key], context);
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The steps of a condition's then / else or a loop's do, as the blueprint wrote them. */
function stepList(value: unknown, key: string): readonly StepSpec[] {
  if (value === undefined) return [];
  const valid =
    Array.isArray(value) &&
    value.every((s) => typeof s === 'object' && s !== null && typeof (s as { type?: unknown }).type === 'string');
  if (!valid) throw new AppError('WORKFLOW_STEP_INVALID', `${key} must be a list of steps`);
  return value as StepSpec[];
}

/** A delay step's duration in milliseconds: a number, or text such as "1500", "1500ms", "30s" or "2m". */
function delayOf(step: StepSpec, context: unknown): number {
  const value = typeof step.duration === 'string' ? resolveTemplates(step.duration, context) : step.duration;
  const match = typeof value === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(value) : null;
  const unit = { ms: 1, s: 1000, m: 60_000 };
  const ms =
    typeof value === 'number' ? value : match ? Number(match[1]) * unit[(match[2] ?? 'ms') as keyof typeof unit] : NaN;
  if (!Number.isFinite(ms) || ms < 0) {
    const given = JSON.stringify(value);
    throw new AppError('WORKFLOW_STEP_INVALID', `delay duration ${given} is not a number of milliseconds`);
  }
  if (ms > MAX_DELAY_MS) {
    const most = MAX_DELAY_MS / 60_000;
    throw new AppError('WORKFLOW_LIMIT_EXCEEDED', `a delay waits at most ${most} minutes; this one ${ms} ms`);
  }
  return Math.round(ms);
}

function notSupported(step: StepSpec): AppError {
  return new AppError(
    'WORKFLOW_STEP_NOT_SUPPORTED',
    `${step.name ? `step "${step.name}": ` : ''}${step.type} steps do not run in this version of the app`,
  );
}
