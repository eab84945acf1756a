// Schedule triggers: a workflow with `trigger = { schedule = "<cron>" }` gets a job at each tick of
// its cron expression, read in UTC (so every instance agrees on the ticks, whatever its TZ). Every
// instance keeps a timer per schedule; the tick's job is stored in the same transaction as the
// tick's key (fired-once.ts), so a tick runs once however many instances reach it.
//
// A tick is run only near its time: one that passed while no instance was running (or while the
// process was stalled past TICK_GRACE_MS) is skipped, and after a restart the next run is the next
// tick from now: no burst of missed runs. At most one tick is run per wake-up for the same reason.

import { Cron } from 'croner';
import { triggerActor } from '../core/actor.ts';
import type { Database } from '../data/database.ts';
import { messageOf } from '../data/migrate.ts';
import { conditionHolds, runContext, type WorkflowSpec } from './engine.ts';
import { fireOnce } from './fired-once.ts';
import { insertJob } from './jobs.ts';

/** How late a tick may still run: a timer wakes late under load, not by minutes. */
export const TICK_GRACE_MS = 60_000;
/** Long waits are cut into pieces of this: a timer set for hours drifts from the wall clock. */
const MAX_SLEEP_MS = 60_000;
/** Instances retry a tick whose job could not be stored (the database busy) this often, within the grace. */
const RETRY_MS = 1_000;
/** A tick's key outlives any instance that could still reach the same tick. */
const TICK_KEEP_MS = 60 * 60_000;

export interface SchedulerOptions {
  /** Called once a tick's job is stored, so the runner takes it at once. */
  submitted(): void;
  warn(message: string): void;
}

export class Scheduler {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly db: Database,
    private readonly workflows: readonly WorkflowSpec[],
    private readonly options: SchedulerOptions,
  ) {}

  start(): void {
    for (const spec of this.workflows) {
      if (spec.trigger?.kind !== 'schedule') continue;
      const cron = new Cron(spec.trigger.cron, { timezone: 'UTC' });
      this.wait(spec, cron, this.nextTick(cron));
    }
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** The first tick after now; undefined when the expression has no more (a date in the past). */
  private nextTick(cron: Cron): number | undefined {
    return cron.nextRun(new Date())?.getTime();
  }

  private wait(spec: WorkflowSpec, cron: Cron, due: number | undefined): void {
    if (due === undefined) return;
    this.sleep(spec, cron, due, Math.min(Math.max(due - Date.now(), 0), MAX_SLEEP_MS));
  }

  private sleep(spec: WorkflowSpec, cron: Cron, due: number, ms: number): void {
    if (this.stopped) return;
    const timer = setTimeout(() => void this.wake(spec, cron, due), ms);
    timer.unref();
    this.timers.set(spec.name, timer);
  }

  private async wake(spec: WorkflowSpec, cron: Cron, due: number): Promise<void> {
    const now = Date.now();
    if (now < due) return this.wait(spec, cron, due);
    if (now - due <= TICK_GRACE_MS) {
      try {
        if (await this.fire(spec, due)) this.options.submitted();
      } catch (err) {
        this.options.warn(`schedule ${spec.name}: the tick of ${iso(due)} was not stored: ${messageOf(err)}`);
        if (Date.now() + RETRY_MS - due <= TICK_GRACE_MS) return this.sleep(spec, cron, due, RETRY_MS);
      }
    }
    this.wait(spec, cron, this.nextTick(cron));
  }

  /** Stores the tick's job unless another instance did; true when this call stored it. */
  private fire(spec: WorkflowSpec, due: number): Promise<boolean> {
    const name = spec.name;
    const data = { kind: 'schedule', tick: iso(due) };
    return this.db.write(function* () {
      if (!(yield* fireOnce(`schedule:${name}:${due}`, TICK_KEEP_MS))) return false;
      // A precondition that does not hold skips the tick, as it skips an entity event.
      if (!conditionHolds(spec.precondition ?? {}, runContext(data))) return false;
      const owner = `schedule:${name}`;
      yield* insertJob(name, owner, triggerActor(owner), data);
      return true;
    });
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
