// Runs the jobs of this app instance: claims pending jobs (jobs.ts) within each workflow's
// maxConcurrent, runs them (engine.ts) and records how they ended. Polls for jobs other instances
// submitted, and wakes at once for its own. A failure a retry can fix (the database busy or
// unreachable) puts the job back to wait, up to the workflow's `retries` runs in all; any other
// failure ends the job, failed, with the error's code and message.

import { AppError } from '../core/errors.ts';
import { messageOf } from '../data/migrate.ts';
import { ActiveTrace, type TraceStore } from '../observe/tracing.ts';
import type { WorkflowSpec } from './engine.ts';
import { type ClaimedJob, JOB_LEASE_MS, type JobStore } from './jobs.ts';

export interface JobRunnerOptions {
  /** How often to look for jobs submitted on other instances (default 1 s). */
  pollMs?: number;
  /** Jobs this instance runs at once, over all workflows (default 20). */
  maxRunning?: number;
  /** Where each run's trace goes (the request that submitted a job has ended by then). */
  traces?: TraceStore;
  /**
   * No other instance runs jobs on this database (SQLite: one machine's file): a job still running
   * when this one starts was left by a process that stopped, whatever its lease says.
   */
  singleInstance?: boolean;
  warn(message: string): void;
}

/** `stopping` aborts when the app stops: steps that wait (delay, a webhook's backoff) end at once. */
export type RunJob = (
  spec: WorkflowSpec,
  job: ClaimedJob,
  trace: ActiveTrace,
  stopping: AbortSignal,
) => Promise<unknown>;

export class JobRunner {
  private readonly running = new Map<string, Promise<void>>();
  private readonly limits: Map<string, number>;
  private readonly byName: Map<string, WorkflowSpec>;
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private readonly stopped = new AbortController();
  private ticking = false;
  private again = false;

  constructor(
    private readonly jobs: JobStore,
    workflows: readonly WorkflowSpec[],
    private readonly runJob: RunJob,
    private readonly options: JobRunnerOptions,
  ) {
    this.byName = new Map(workflows.map((w) => [w.name, w]));
    this.limits = new Map(workflows.map((w) => [w.name, w.maxConcurrent]));
  }

  /** Starts polling, and fails the jobs of instances that stopped while running them. */
  start(): void {
    if (this.limits.size === 0) return;
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const timer = setInterval(() => {
        fn().catch((err: unknown) => this.options.warn(`jobs: ${messageOf(err)}`));
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.options.pollMs ?? 1000, async () => this.wake());
    every(JOB_LEASE_MS / 3, () => this.jobs.renew([...this.running.keys()]));
    every(JOB_LEASE_MS, () => this.jobs.interruptLapsed());
    // At start this instance runs nothing yet: with no other instance, every running job is stale.
    const before = this.options.singleInstance ? Number.MAX_SAFE_INTEGER : Date.now();
    this.jobs.interruptLapsed(before).then(
      () => this.wake(),
      () => undefined,
    );
  }

  /** Looks for jobs now (one was just submitted here). */
  wake(): void {
    if (this.stopping || this.limits.size === 0) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    this.claim()
      .catch((err: unknown) => this.options.warn(`jobs: claiming failed: ${messageOf(err)}`))
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /**
   * Stops taking jobs and waits for the running ones, at most `deadlineMs`; their leases then lapse.
   * A job waiting (a delay step) stops waiting at once with JOB_INTERRUPTED, retryable: it goes back
   * to pending while it has attempts left, and runs again from its first step.
   */
  async stop(deadlineMs = 10_000): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.running.values()]),
      new Promise<void>((resolve) => {
        timeout = setTimeout(resolve, deadlineMs);
        timeout.unref();
      }),
    ]);
    clearTimeout(timeout);
  }

  private async claim(): Promise<void> {
    const room = (this.options.maxRunning ?? 20) - this.running.size;
    if (room <= 0) return;
    for (const job of await this.jobs.claim(this.limits, room)) {
      const done = this.run(job).finally(() => {
        this.running.delete(job.id);
        this.wake();
      });
      this.running.set(job.id, done);
    }
  }

  private async run(job: ClaimedJob): Promise<void> {
    const spec = this.byName.get(job.workflow) as WorkflowSpec;
    const trace = new ActiveTrace();
    const span = trace.startSpan(`workflow.${spec.name}`, 'workflow', {
      jobId: job.id,
      attempt: job.attempts,
      ...(job.causeTraceId ? { causeTraceId: job.causeTraceId } : {}),
    });
    try {
      const result = await this.runJob(spec, job, trace, this.stopped.signal);
      span.end({ status: 'completed' });
      await this.jobs.complete(job.id, result);
    } catch (err) {
      const failure =
        err instanceof AppError ? err : new AppError('INTERNAL_ERROR', 'the workflow failed', { cause: err });
      span.end({ status: 'failed', code: failure.code });
      if (failure.code === 'INTERNAL_ERROR') this.options.warn(`job ${job.id} (${spec.name}) failed: ${String(err)}`);
      if (failure.retryable && job.attempts < spec.retries) await this.jobs.retry(job.id);
      else await this.jobs.fail(job.id, failure);
    } finally {
      const route = `workflow.${spec.name}`;
      const filed = trace.finish({ method: 'JOB', path: `/api/jobs/${job.id}`, statusCode: 200, route });
      this.options.traces?.add(filed);
      // The causing request's trace shows the run too, pointing at the run's own trace.
      if (job.causeTraceId) {
        const { name, type, startTime, endTime, duration, attributes } = filed.spans[0];
        const linked = { ...attributes, runTraceId: filed.traceId };
        this.options.traces?.attach(job.causeTraceId, { name, type, startTime, endTime, duration, attributes: linked });
      }
    }
  }
}
