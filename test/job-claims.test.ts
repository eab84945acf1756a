// A workflow's job claims on PostgreSQL, where a claim waits for other connections (the
// workflow's advisory lock, then the count of its running jobs): a job started in the place of
// one that finished while the claim waited must start after that one finished, or the jobs'
// reported times overlap beyond the workflow's maxConcurrent (found by workflows.test.ts's burst
// test on PostgreSQL under load: three jobs "running at once" with a limit of two).

import * as path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { ANONYMOUS } from '../runtime-lib/core/actor.ts';
import { AppError } from '../runtime-lib/core/errors.ts';
import { openPostgres, type PostgresDatabase } from '../runtime-lib/data/postgres.ts';
import { applyPostgresMigrations } from '../runtime-lib/data/postgres-migrate.ts';
import { claimLockKey, insertJob, JobStore } from '../runtime-lib/workflows/jobs.ts';
import { ROOT } from './support/apps.ts';
import { freshPostgresDatabase } from './support/postgres.ts';

/** The reference app's PostgreSQL migrations, as generated (they create _bp_jobs). */
const MIGRATIONS = path.join(ROOT, 'test/golden/helpdesk/tree/prisma/postgres/migrations');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('job claims on PostgreSQL', function () {
  let url: string;
  let db: PostgresDatabase;
  let holder: pg.Client;

  before(async () => {
    url = await freshPostgresDatabase('jobclaims');
    db = await openPostgres(url);
    await applyPostgresMigrations(db.pool, MIGRATIONS);
    holder = new pg.Client({ connectionString: url });
    await holder.connect();
  });
  after(async () => {
    await holder?.end();
    await db?.close();
  });

  it("starts a job taking a place freed while the claim waited after the freeing job's end", async () => {
    const jobs = new JobStore(db);
    const limits = new Map([['Ponder', 1]]);
    const [first, second] = await db.write(function* () {
      return [
        yield* insertJob('Ponder', 'owner', ANONYMOUS, { n: 1 }),
        yield* insertJob('Ponder', 'owner', ANONYMOUS, { n: 2 }),
      ];
    });
    expect((await jobs.claim(limits, 10)).map((j) => j.id)).to.deep.equal([first.id]);

    // Another instance's claim of the same workflow holds its lock: this claim waits for it.
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [claimLockKey('Ponder')]);
    let settled = false;
    const claiming = jobs.claim(limits, 10).finally(() => (settled = true));
    await sleep(150);
    expect(settled, 'the claim waits for the workflow lock').to.equal(false);
    // Meanwhile the running job ends, and its place is free once the lock is let go.
    expect(await jobs.complete(first.id, { done: true })).to.equal(true);
    await sleep(20);
    await holder.query('COMMIT');
    expect((await claiming).map((j) => j.id)).to.deep.equal([second.id]);

    const rows = (await holder.query('SELECT "id", "startedAt", "finishedAt" FROM "_bp_jobs" ORDER BY "id"'))
      .rows as Array<{
      id: string;
      startedAt: string;
      finishedAt: string | null;
    }>;
    const [ended, started] = rows;
    expect(ended.id).to.equal(first.id);
    expect(Number(started.startedAt), 'started after the job it replaced finished').to.be.at.least(
      Number(ended.finishedAt),
    );
  });

  it('counts the jobs in each state (for the admin server and the metrics; SQLite: admin-server.test.ts)', async () => {
    const jobs = new JobStore(db);
    const before = await jobs.countByState();
    expect(before).to.have.keys('pending', 'running', 'completed', 'failed');
    await db.write(function* () {
      yield* insertJob('Count', 'owner', ANONYMOUS, { n: 1 });
      yield* insertJob('Count', 'owner', ANONYMOUS, { n: 2 });
      yield* insertJob('Count', 'owner', ANONYMOUS, { n: 3 });
    });
    const [one, two] = await jobs.claim(new Map([['Count', 2]]), 10);
    await jobs.fail(one.id, new AppError('WORKFLOW_STEP_INVALID', 'failed on purpose'));
    await jobs.complete(two.id, null);
    expect(await jobs.countByState()).to.deep.equal({
      pending: before.pending + 1,
      running: before.running,
      completed: before.completed + 1,
      failed: before.failed + 1,
    });
  });
});
