// The SQLite section of `npm run bench`: the generated app against three hand-written baselines on
// copies of one seeded SQLite file, its command against its plain update, its cold start and
// memory. Writes bench/.work/results.json and results.md. See bench/README.md.

import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { START_NODE_FLAGS } from '../generator/emit/index.ts';
import BetterSqlite3 from 'better-sqlite3';
import { COMMAND_OPERATIONS, OPERATIONS, type RoundResult } from './plan.ts';
import {
  APP_DIR,
  PRISMA_CLIENT_DIRS,
  ROOT,
  SQLITE_SCHEMA,
  WORK,
  generatePrismaClient,
  seedDatabase,
  type SeedRows,
} from './prepare.ts';
import { buildReport, consoleReport, footprintLines, markdownReport, type Footprint, type Target } from './report.ts';
import { freePort } from '../bin/dev/free-port.ts';
import {
  baseline,
  measureServer,
  serverEnv,
  startChild,
  stop,
  type Credentials,
  type RunContext,
  type Server,
} from './servers.ts';

const APP = 'bp-app';
const SERVERS: Server[] = [
  { key: 'node-http-sqlite', label: 'node:http + better-sqlite3', cwd: ROOT, args: baseline('node-http-sqlite.ts') },
  { key: 'express-sqlite', label: 'Express + better-sqlite3', cwd: ROOT, args: baseline('express-sqlite.ts') },
  { key: 'express-prisma', label: 'Express + Prisma 7', cwd: ROOT, args: baseline('express-prisma.ts') },
  // The production build, as `npm start` runs it (without npm's own start-up): dist/ is fresh by then.
  { key: APP, label: 'bp generated app', cwd: APP_DIR, args: [...START_NODE_FLAGS, 'scripts/start.js', 'server'] },
];

/** Cold starts of the generated app measured, one fresh process each. */
const COLD_STARTS = 5;

const TARGETS: Target[] = [
  ...OPERATIONS.map((operation) => ({ operation, baseline: 'express-prisma', atLeast: 1.5 })),
  { operation: 'get', baseline: 'express-sqlite', atLeast: 0.75 },
];

/** A copy of the seeded file for one server, so that no server sees another's writes. */
function copyOf(seedFile: string, name: string): string {
  const dbFile = path.join(WORK, 'db', `${name}.db`);
  fs.copyFileSync(seedFile, dbFile);
  return dbFile;
}

/** The main operations on a server, on its own copy of the seeded file. */
async function measure(ctx: RunContext, server: Server, seedFile: string, fields: string[]): Promise<RoundResult[]> {
  const dbFile = copyOf(seedFile, server.key);
  return measureServer(ctx, {
    server,
    name: server.key,
    databaseUrl: `file:${dbFile}`,
    fields,
    operations: [...OPERATIONS],
  });
}

/** One GET on a fresh connection: its status, or undefined while nothing listens. */
function probe(url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(undefined));
  });
}

/**
 * Cold start: from spawning the production build (what `npm start` runs, on a copy of the seeded
 * database) to its first 200 on GET /healthz, or on GET /api/openapi.json where the app has no
 * /healthz. Polled every 2 ms on fresh connections; each start is a new process, stopped after.
 */
async function coldStart(
  server: Server,
  seedFile: string,
  credentials: Credentials,
): Promise<{ ms: number; probe: string }> {
  const dbFile = copyOf(seedFile, 'cold-start');
  const port = await freePort();
  let route = '/healthz';
  const log = path.join(WORK, 'logs', 'cold-start.log');
  const logFd = fs.openSync(log, 'w');
  const started = performance.now();
  const child = startChild(server.cwd, server.args, serverEnv(credentials, port, `file:${dbFile}`), logFd);
  try {
    while (performance.now() - started < 30_000) {
      if (child.exitCode !== null) throw new Error(`the app exited with ${child.exitCode}; see ${log}`);
      const status = await probe(`http://127.0.0.1:${port}${route}`);
      if (status === 200) return { ms: performance.now() - started, probe: `GET ${route}` };
      if (status === 404 && route === '/healthz') route = '/api/openapi.json';
      else if (status === undefined) await sleep(2);
      else if (status !== 404) throw new Error(`GET ${route} answered ${status}; see ${log}`);
    }
    throw new Error(`the app did not answer within 30 s; see ${log}`);
  } finally {
    await stop(child);
    fs.closeSync(logFd);
  }
}

/** How the jobs a run submitted went: how many completed, and at what rate from the first start to the last finish. */
interface JobThroughput {
  completed: number;
  failed: number;
  perSecond: number;
}

/**
 * Waits (up to 2 minutes) until no job of the app's database is pending or running, then reads
 * how many completed, from the first start to the last finish: the runner's own rate, whatever
 * the rate at which the load generator submitted them.
 */
async function drainedJobs(dbFile: string): Promise<JobThroughput> {
  const db = new BetterSqlite3(dbFile, { readonly: true });
  try {
    const open = db.prepare(`SELECT COUNT(*) AS "n" FROM "_bp_jobs" WHERE "status" IN ('pending', 'running')`);
    const deadline = Date.now() + 120_000;
    while ((open.get() as { n: number }).n > 0) {
      if (Date.now() > deadline) throw new Error('the jobs of the escalation rounds did not finish within 2 minutes');
      await sleep(200);
    }
    const row = db
      .prepare(
        `SELECT SUM("status" = 'completed') AS "completed", SUM("status" = 'failed') AS "failed", ` +
          `MIN("startedAt") AS "first", MAX("finishedAt") AS "last" FROM "_bp_jobs"`,
      )
      .get() as { completed: number; failed: number; first: number; last: number };
    return { completed: row.completed, failed: row.failed, perSecond: row.completed / ((row.last - row.first) / 1000) };
  } finally {
    db.close();
  }
}

/** RSS of the generated app's main run: after the first warm-up, and after the last round. */
function footprint(starts: Array<{ ms: number; probe: string }>, all: Record<string, RoundResult[]>): Footprint {
  const rounds = all[APP];
  const baselines = SERVERS.filter((s) => s.key !== APP && all[s.key]?.length);
  return {
    command: `node ${[...START_NODE_FLAGS, 'scripts/start.js', 'server'].join(' ')}`,
    baselineRssMax: baselines.map((s) => ({ label: s.label, bytes: Math.max(...all[s.key].map((r) => r.serverRss)) })),
    probe: starts[0].probe,
    coldStartsMs: starts.map((s) => s.ms),
    rssAfterWarmup: rounds[0].serverRss,
    rssAfterLoad: rounds[rounds.length - 1].serverRss,
    rssMax: Math.max(...rounds.map((r) => r.serverRss)),
  };
}

/** The skill action's 202 round trip and the jobs completed per second, each against the plain command. */
function jobsSummary(rounds: RoundResult[], jobs: JobThroughput): string {
  const best = (op: string) =>
    rounds
      .filter((r) => r.operation === op && r.round > 0)
      .sort((a, b) => b.requestsPerSecond - a.requestsPerSecond)[0];
  const [skill, command] = [best('escalate'), best('command')];
  const rate = (n: number) => Math.round(n).toLocaleString('en-US');
  return (
    `Skill action starting a workflow (escalate_ticket: body and precondition checked, job stored, 202): ` +
    `${rate(skill.requestsPerSecond)} req/s, p50 ${skill.p50.toFixed(2)} ms, p99 ${skill.p99.toFixed(2)} ms, ` +
    `against the plain command (StartTicket) ${rate(command.requestsPerSecond)} req/s, ` +
    `p50 ${command.p50.toFixed(2)} ms, p99 ${command.p99.toFixed(2)} ms: ` +
    `${(skill.requestsPerSecond / command.requestsPerSecond).toFixed(2)}×. ` +
    `Jobs of EscalateTicket (one update step, then a console notify; maxConcurrent 5) completed meanwhile: ` +
    `${rate(jobs.perSecond)} per second (${rate(jobs.completed)} completed, ${jobs.failed} failed), ` +
    `${(jobs.perSecond / command.requestsPerSecond).toFixed(2)}× the plain command.`
  );
}

/** Runs the section; returns every server's rounds, by key, for the run's check of failed requests. */
export async function sqliteSection(ctx: RunContext, seed: SeedRows): Promise<Record<string, RoundResult[]>> {
  console.log('\nSQLite: Prisma Client and the seeded database…');
  generatePrismaClient(SQLITE_SCHEMA, PRISMA_CLIENT_DIRS.sqlite);
  const seedFile = path.join(WORK, 'seed.db');
  const { columns } = seedDatabase(seedFile, seed);
  const fields = [...columns].sort();

  const rounds: Record<string, RoundResult[]> = {};
  for (const server of SERVERS) {
    console.log(`\n${server.label}`);
    rounds[server.key] = await measure(ctx, server, seedFile, fields);
  }

  // Issue 4: what a command (policy, availableWhen, audit, idempotency, one transaction) costs
  // against the plain update of the same record, on the same server and data. Issue 11: a skill
  // action that starts a workflow answers 202 with a job; how that round trip compares with the
  // command, and how many jobs of the workflow (EscalateTicket: one update step, then its console
  // notify) the app completes per second meanwhile.
  const app = SERVERS.find((s) => s.key === APP) as Server;
  console.log(`\n${app.label}: command execution and a skill action starting a workflow, against the plain update`);
  const openIdsFile = path.join(WORK, 'open-ids.json');
  fs.writeFileSync(openIdsFile, JSON.stringify(seed.tickets.filter((t) => t[3] === 'open').map((t) => t[0])));
  const commandsDb = copyOf(seedFile, 'bp-app-commands');
  let jobs: JobThroughput | undefined;
  const commandRounds = await measureServer(ctx, {
    server: app,
    name: 'bp-app-commands',
    databaseUrl: `file:${commandsDb}`,
    fields,
    operations: [...COMMAND_OPERATIONS, 'escalate'],
    resetDb: commandsDb,
    openIdsFile,
    afterLoad: async () => {
      jobs = await drainedJobs(commandsDb);
    },
  });
  const best = (op: string) =>
    Math.max(...commandRounds.filter((r) => r.operation === op && r.round > 0).map((r) => r.requestsPerSecond));
  const commandSummary =
    'Command execution (StartTicket: policy, availableWhen, audit, idempotency, one transaction) ' +
    `on the generated app: ${Math.round(best('command')).toLocaleString('en-US')} req/s ` +
    `against ${Math.round(best('update')).toLocaleString('en-US')} req/s for the plain update of the same record: ` +
    `${(best('command') / best('update')).toFixed(2)}×.`;
  const jobSummary = jobsSummary(commandRounds, jobs as JobThroughput);

  console.log(`\n${app.label}: ${COLD_STARTS} cold starts of the production build`);
  const starts: Array<{ ms: number; probe: string }> = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    starts.push(await coldStart(app, seedFile, ctx.credentials));
    console.log(`    ${Math.round(starts[i].ms)} ms to the first 200 on ${starts[i].probe}`);
  }
  const measured = footprint(starts, rounds);
  const footprintReport = footprintLines(measured);

  const report = buildReport(SERVERS, APP, [...OPERATIONS], rounds, ctx.settings, TARGETS);
  const results = { ...report, commands: commandRounds, jobs, footprint: measured };
  fs.writeFileSync(path.join(WORK, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  fs.writeFileSync(
    path.join(WORK, 'results.md'),
    `${markdownReport(report, APP)}\n${commandSummary}\n\n${jobSummary}\n\n${footprintReport.join('\n')}\n`,
  );
  console.log('\nSQLite');
  console.log(consoleReport(report, APP));
  console.log(`\n${commandSummary}`);
  console.log(`\n${jobSummary}`);
  console.log(`\n${footprintReport.join('\n')}`);
  return { ...rounds, 'bp-app-commands': commandRounds };
}
