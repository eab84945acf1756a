// Workflow jobs in the app's database (_bp_jobs), not in memory: a client polling after a restart
// gets an answer, and every instance of the app on one PostgreSQL sees and runs the same jobs.
//
// pending -> running -> completed | failed. A job is claimed by one instance at a time: the claim
// is one transaction that, per workflow, counts the running jobs and takes the oldest pending ones
// up to `maxConcurrent` (on PostgreSQL under a transaction-scoped advisory lock per workflow, so two
// instances cannot both take the last free place, and FOR UPDATE SKIP LOCKED). The instance running
// a job renews its lease; a job whose lease lapsed was running on an instance that stopped, and
// fails with JOB_INTERRUPTED (retryable): a transactional workflow committed nothing of it, so a
// client may submit it again; another workflow's finished steps stay done.

import { createHash } from 'node:crypto';
import { ANONYMOUS, type Actor, type ActorFields, makeActor } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import { ulid, ULID_PATTERN } from '../core/ids.ts';
import { all, type Database, get, run, type Work } from '../data/database.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export const JOBS_TABLE = '_bp_jobs';
const T = `"${JOBS_TABLE}"`;
/** How long a running job's claim lasts without renewal. */
export const JOB_LEASE_MS = 30_000;

export type JobStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface JobView {
  id: string;
  workflow: string;
  status: JobStatus;
  url: string;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  attempts: number;
  result: unknown;
  error: { code: string; message: string; retryable: boolean } | null;
}

/** A claimed job, as the runner runs it. */
export interface ClaimedJob {
  id: string;
  workflow: string;
  actor: Actor;
  data: Record<string, unknown>;
  attempts: number;
  /** The trace of the request that caused the job, if one did (not a schedule's tick). */
  causeTraceId?: string;
}

export function jobUrl(id: string): string {
  return `/api/jobs/${id}`;
}

/**
 * The new job of a submission, inserted in the submission's transaction. The request that caused
 * it (`cause`) gets a `workflow` span saying so, and the job remembers its trace: the runner adds
 * the run's span to it once the job has run (runner.ts).
 */
export function* insertJob(
  workflow: string,
  owner: string,
  actor: Actor,
  data: unknown,
  cause?: ActiveTrace,
): Work<JobView> {
  const id = ulid();
  const now = Date.now();
  yield* run(
    `INSERT INTO ${T} ("id", "workflow", "status", "owner", "actor", "data", "attempts", "createdAt", ` +
      `"causeTraceId") VALUES (?, ?, 'pending', ?, ?, ?, 0, ?, ?)`,
    [id, workflow, owner, JSON.stringify(actor), JSON.stringify(data), now, cause?.traceId ?? null],
  );
  cause?.startSpan(`workflow.${workflow}`, 'workflow', { jobId: id, status: 'pending' }).end();
  return view({ id, workflow, status: 'pending', createdAt: now, attempts: 0 });
}

export class JobStore {
  /** PostgreSQL: claims of one workflow wait for each other across instances. */
  private readonly postgres: boolean;

  constructor(readonly db: Database) {
    this.postgres = db.dialect === 'postgres';
  }

  /**
   * The job as its owner sees it; undefined for anyone else (they hear 404, as for no job). Job
   * ids are ULIDs: another id is no job's, and the database is not asked (PostgreSQL would refuse
   * a NUL byte outright).
   */
  async find(id: string, owner: string, trace?: ActiveTrace): Promise<JobView | undefined> {
    if (!ULID_PATTERN.test(id)) return undefined;
    const row = await this.db.read(get(`SELECT * FROM ${T} WHERE "id" = ? AND "owner" = ?`, [id, owner]), trace);
    return row && view(row);
  }

  /** How many jobs are in each state, every state named (0 when none): the admin server and the metrics show them. */
  async countByState(): Promise<Record<JobStatus, number>> {
    const rows = await this.db.read(all(`SELECT "status", COUNT(*) AS "n" FROM ${T} GROUP BY "status"`));
    const counts: Record<JobStatus, number> = { pending: 0, running: 0, completed: 0, failed: 0 };
    for (const row of rows)
      if (Object.hasOwn(counts, String(row.status))) counts[row.status as JobStatus] = Number(row.n);
    return counts;
  }

  /** Claims pending jobs, oldest first, as long as each workflow stays within its limit. */
  async claim(limits: ReadonlyMap<string, number>, max: number): Promise<ClaimedJob[]> {
    // The runner asks every second: with nothing pending, a read answers, not a write transaction
    // (and, on PostgreSQL, its advisory locks).
    if (!(await this.db.read(get(`SELECT 1 AS "one" FROM ${T} WHERE "status" = 'pending' LIMIT 1`)))) return [];
    const postgres = this.postgres;
    return this.db.write(function* () {
      const claimed: ClaimedJob[] = [];
      for (const [workflow, limit] of limits) {
        if (claimed.length >= max) break;
        if (postgres) yield* get('SELECT pg_advisory_xact_lock(?) AS "locked"', [claimLockKey(workflow)]);
        const running = yield* get(`SELECT COUNT(*) AS "n" FROM ${T} WHERE "workflow" = ? AND "status" = 'running'`, [
          workflow,
        ]);
        const free = Math.min(limit - Number(running?.n ?? 0), max - claimed.length);
        if (free <= 0) continue;
        const rows = yield* all(
          `SELECT "id", "actor", "data", "attempts", "causeTraceId" FROM ${T} ` +
            `WHERE "workflow" = ? AND "status" = 'pending' ` +
            `ORDER BY "createdAt", "id" LIMIT ?${postgres ? ' FOR UPDATE SKIP LOCKED' : ''}`,
          [workflow, free],
        );
        // Read after the count: on PostgreSQL the lock and the count wait on other connections,
        // and a job that finished meanwhile (freeing the slot taken here) must not seem to
        // overlap with its successor: startedAt comes after the finishedAt it made room with.
        const now = Date.now();
        for (const row of rows) {
          yield* run(
            `UPDATE ${T} SET "status" = 'running', "startedAt" = ?, "attempts" = "attempts" + 1, ` +
              `"leaseExpiresAt" = ? WHERE "id" = ?`,
            [now, now + JOB_LEASE_MS, row.id],
          );
          claimed.push({
            id: String(row.id),
            workflow,
            actor: storedActor(String(row.actor)),
            data: JSON.parse(String(row.data)) as Record<string, unknown>,
            attempts: Number(row.attempts) + 1,
            ...(typeof row.causeTraceId === 'string' ? { causeTraceId: row.causeTraceId } : {}),
          });
        }
      }
      return claimed;
    });
  }

  /** Keeps running jobs claimed; a job no longer running here (interrupted meanwhile) drops out. */
  async renew(ids: readonly string[]): Promise<void> {
    if (!ids.length) return;
    const until = Date.now() + JOB_LEASE_MS;
    await this.db.write(function* () {
      for (const id of ids) {
        yield* run(`UPDATE ${T} SET "leaseExpiresAt" = ? WHERE "id" = ? AND "status" = 'running'`, [until, id]);
      }
    });
  }

  /** The job ran to its end; `false` when it was no longer running (interrupted meanwhile). */
  async complete(id: string, result: unknown): Promise<boolean> {
    return this.finish(id, 'completed', JSON.stringify(result ?? null), null);
  }

  async fail(id: string, err: AppError): Promise<boolean> {
    const error = JSON.stringify({ code: err.code, message: err.message, retryable: err.retryable });
    return this.finish(id, 'failed', null, error);
  }

  /** Puts a job back to wait for another attempt (a retryable failure). */
  async retry(id: string): Promise<void> {
    await this.db.writeEach(
      run(`UPDATE ${T} SET "status" = 'pending', "leaseExpiresAt" = NULL WHERE "id" = ? AND "status" = 'running'`, [
        id,
      ]),
    );
  }

  /** Fails every running job whose lease lapsed before `before`: its instance stopped. Resolves to how many. */
  async interruptLapsed(before = Date.now()): Promise<number> {
    const now = Date.now();
    const error = JSON.stringify({
      code: 'JOB_INTERRUPTED',
      message:
        'the app instance running this job stopped before it finished: a transactional workflow committed nothing ' +
        'of it; the steps of another that had finished stay done',
      retryable: true,
    });
    const { changes } = await this.db.writeEach(
      run(
        `UPDATE ${T} SET "status" = 'failed', "error" = ?, "finishedAt" = ?, "leaseExpiresAt" = NULL ` +
          `WHERE "status" = 'running' AND "leaseExpiresAt" < ?`,
        [error, now, before],
      ),
    );
    return changes;
  }

  private async finish(id: string, status: JobStatus, result: string | null, error: string | null): Promise<boolean> {
    const { changes } = await this.db.writeEach(
      run(
        `UPDATE ${T} SET "status" = ?, "result" = ?, "error" = ?, "finishedAt" = ?, "leaseExpiresAt" = NULL ` +
          `WHERE "id" = ? AND "status" = 'running'`,
        [status, result, error, Date.now(), id],
      ),
    );
    return changes > 0;
  }
}

/**
 * The advisory lock the claims of one workflow take on PostgreSQL, a 64-bit key (PostgreSQL's
 * bigint) from its name. Exported so that a test can hold it and make a claim wait.
 */
export function claimLockKey(workflow: string): string {
  const hex = createHash('sha256').update(`bp-jobs:${workflow}`).digest('hex').slice(0, 16);
  return BigInt.asIntN(64, BigInt(`0x${hex}`)).toString();
}

/** The submitter, as the job recorded it: written by this app, so trusted as the request's actor was. */
function storedActor(text: string): Actor {
  const actor = JSON.parse(text) as Actor;
  return actor.kind === 'anonymous' ? ANONYMOUS : makeActor(actor as ActorFields);
}

function iso(ms: unknown): string | null {
  return ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString();
}

function view(row: Record<string, unknown>): JobView {
  const id = String(row.id);
  return {
    id,
    workflow: String(row.workflow),
    status: row.status as JobStatus,
    url: jobUrl(id),
    createdAt: iso(row.createdAt) as string,
    startedAt: iso(row.startedAt),
    completedAt: iso(row.finishedAt),
    attempts: Number(row.attempts ?? 0),
    result: row.result === null || row.result === undefined ? null : JSON.parse(String(row.result)),
    error: row.error === null || row.error === undefined ? null : JSON.parse(String(row.error)),
  };
}
