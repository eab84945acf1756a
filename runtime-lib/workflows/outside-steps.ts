// The steps that act outside the database: a notification or e-mail through its adapter, a webhook,
// a plugin action or a service operation from src/extend.ts, and a delay. None can be rolled back,
// and a delay must not hold a transaction open: in a transactional workflow the engine runs them
// after the commit, in their order (the validator refuses a database step that reads their results).

import { createHash } from 'node:crypto';
import { AppError } from '../core/errors.ts';
import type { StepSpec } from './engine.ts';
import { callService } from './services.ts';
import type { StepEnv } from './step-types.ts';
import { define, resolveTemplates } from './templates.ts';
import { deliverWebhook, pause, WEBHOOK_METHODS } from './webhook.ts';

/**
 * The longest delay step. A waiting job keeps its lease (the runner renews it) and its place
 * under maxConcurrent; past a few minutes a schedule is the tool, not a job that sleeps.
 */
export const MAX_DELAY_MS = 5 * 60_000;

export async function notifyStep(env: StepEnv, step: StepSpec, _at: string, context: unknown): Promise<void> {
  const { rt, workflow, job } = env;
  const text = (key: string) => textOf(step, key, context);
  const adapter = text('adapter') ?? rt.defaultAdapter;
  if (adapter === undefined) throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', 'a notify step names no adapter');
  await rt.notify(
    {
      adapter,
      channel: text('channel'),
      to: text('to'),
      subject: text('subject'),
      // `message` is read as the body it means (Zebric drops it).
      body: text('body') ?? text('message') ?? '',
      template: text('template'),
      metadata: metadataOf(step, context),
      workflow: workflow.name,
      jobId: job.id,
    },
    env.signal,
  );
}

/** An email step: a notification with to, subject and body, through the email adapter (else the default). */
export async function emailStep(env: StepEnv, step: StepSpec, _at: string, context: unknown): Promise<void> {
  const { rt, workflow, job } = env;
  const adapter = rt.emailAdapter ?? rt.defaultAdapter;
  if (adapter === undefined) {
    throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', 'an email step needs an adapter of type email, or a default');
  }
  const to = textOf(step, 'to', context);
  const subject = textOf(step, 'subject', context);
  if (!to || !subject) throw new AppError('WORKFLOW_STEP_INVALID', 'an email step needs to and subject');
  await rt.notify(
    {
      adapter,
      to,
      subject,
      body: textOf(step, 'body', context) ?? '',
      template: textOf(step, 'template', context),
      workflow: workflow.name,
      jobId: job.id,
    },
    env.signal,
  );
}

/**
 * A webhook step. Every attempt of it, in this run or a later one of the same job, sends the same
 * Idempotency-Key: the job's id and the step's place (`steps.2`, `steps.1[3].do.0` in a loop).
 */
export async function webhookStep(env: StepEnv, step: StepSpec, at: string, context: unknown): Promise<unknown> {
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
  const idempotencyKey = createHash('sha256').update(`bp-webhook:${env.job.id}:${at}`).digest('hex').slice(0, 32);
  return deliverWebhook(
    { url, method, headers, body, idempotencyKey },
    { blockPrivate: env.rt.blockPrivateTargets, signal: env.signal },
  );
}

/**
 * A plugin step: the action src/extend.ts registers as plugins.<plugin>.<action_name>, or the
 * enabled [[plugins]] package's workflows.<action_name> (runtime/plugins), with the step's params.
 */
export async function pluginStep(
  env: StepEnv,
  step: StepSpec,
  _at: string,
  context: Record<string, unknown>,
): Promise<unknown> {
  const name = String(step.plugin);
  const actionName = String(step.action_name);
  const plugin = Object.hasOwn(env.rt.plugins, name) ? env.rt.plugins[name] : undefined;
  const action = plugin && Object.hasOwn(plugin, actionName) ? plugin[actionName] : undefined;
  if (typeof action !== 'function') {
    throw new AppError(
      'WORKFLOW_STEP_NOT_SUPPORTED',
      `plugin action ${name}.${actionName} is not registered: add it to plugins in src/extend.ts, ` +
        'or enable a [[plugins]] package whose workflows provide it',
    );
  }
  const params = resolveTemplates(step.params ?? {}, context);
  // A copy: the action cannot change what later steps read.
  const { workflow, job } = env;
  return action(params, {
    workflow: workflow.name,
    jobId: job.id,
    actor: job.actor,
    context: structuredClone(context),
  });
}

/** A service step: an operation of a declared [service.*], its input and result checked (services.ts). */
export async function serviceStep(env: StepEnv, step: StepSpec, _at: string, context: unknown): Promise<unknown> {
  return callService(env.rt.services, env.rt.serviceImplementations, {
    service: String(step.service),
    operation: String(step.operation),
    input: resolveTemplates(step.params ?? {}, context),
    ctx: { workflow: env.workflow.name, jobId: env.job.id },
  });
}

/** A delay step: waits, unless the app stops (the signal ends the wait at once). */
export async function delayStep(env: StepEnv, step: StepSpec, _at: string, context: unknown): Promise<void> {
  return pause(delayOf(step, context), env.signal);
}

/** A notify step's `metadata` table, templates resolved; undefined when absent. */
function metadataOf(step: StepSpec, context: unknown): Record<string, unknown> | undefined {
  if (step.metadata === undefined || step.metadata === null) return undefined;
  const value = resolveTemplates(step.metadata, context);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('WORKFLOW_STEP_INVALID', "a notify step's metadata must be a table");
  }
  return value as Record<string, unknown>;
}

/** A key of the step as text, its templates resolved; undefined when absent or null. */
function textOf(step: StepSpec, key: string, context: unknown): string | undefined {
  const value = step[key] === undefined ? undefined : resolveTemplates(step[key], context);
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
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
