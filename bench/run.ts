// `npm run bench`: the generated reference app against three hand-written baselines on the same
// table and data. Each server runs alone (the machine has few cores), on its own copy of the
// seeded database, and is driven by bench/load.ts in a separate process. See bench/README.md.
//
// Settings from the environment: BENCH_WARMUP_SECONDS (5), BENCH_ROUND_SECONDS (3), BENCH_ROUNDS (3).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { COMMAND_OPERATIONS, OPERATIONS, type LoadPlan, type RoundResult } from './plan.ts';
import { START_NODE_FLAGS } from '../generator/emit/index.ts';
import { APP_DIR, ROOT, TICKETS, WORK, buildApp, cleanWork, generateApp, generatePrismaClient, seedDatabase, writerKeyEnv } from './prepare.ts';
import {
  OPERATION_LABELS,
  buildReport,
  consoleReport,
  footprintLines,
  markdownReport,
  type Footprint,
  type ServerInfo,
  type Settings,
  type Target,
} from './report.ts';

interface Server extends ServerInfo {
  cwd: string;
  /** node's arguments. */
  args: string[];
}

const APP = 'bp-app';
const baseline = (script: string) => ['--import', 'tsx', `bench/baselines/${script}`];
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

function seconds(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!(value > 0)) throw new Error(`${name} must be a positive number (got "${raw}")`);
  return value;
}

/** Children still running, so that an interrupted or failed run leaves no server behind. */
const children = new Set<ChildProcess>();

/**
 * The load generator runs on CPU 1 when the machine has two CPUs and taskset (util-linux) is
 * installed. Left to the scheduler, it sometimes shared a core with the server's main thread, and
 * on this 2-core machine that swung a server's numbers by about 30 % between runs. The server is
 * not pinned: pinned to one core, its JIT and GC threads compete with its main thread, which hurt
 * the Prisma baseline (a large WebAssembly query compiler to warm up) far more than the others.
 */
const TASKSET = os.availableParallelism() >= 2 && spawnSync('taskset', ['-c', '1', 'true']).status === 0;

const settings: Settings = {
  tickets: TICKETS,
  connections: 32,
  warmupSeconds: seconds('BENCH_WARMUP_SECONDS', 5),
  roundSeconds: seconds('BENCH_ROUND_SECONDS', 3),
  rounds: Math.max(2, Math.floor(seconds('BENCH_ROUNDS', 3))),
  pinned: TASKSET,
};

function startChild(cwd: string, args: string[], env: NodeJS.ProcessEnv, stdio: 'pipe' | number, pin = false): ChildProcess {
  const node = [process.execPath, ...args];
  // taskset execs node, so the child's pid is node's.
  const [command, ...rest] = pin && TASKSET ? ['taskset', '-c', '1', ...node] : node;
  const child = spawn(command, rest, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', stdio, stdio],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function freePort(): Promise<number> {
  const probe = net.createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as net.AddressInfo;
  probe.close();
  await once(probe, 'close');
  return port;
}

async function waitUntilAnswering(url: string, child: ChildProcess, log: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}; see ${log}`);
    try {
      // Any answer will do: the API refuses this unauthenticated request once it is up.
      await (await fetch(`${url}/api/tickets?limit=1`)).arrayBuffer();
      return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  throw new Error(`the server did not answer within 30 s; see ${log}`);
}

/**
 * One request of each operation, checked before the load: every server must do the real work and
 * answer with the generated app's statuses and response shapes, or its numbers mean nothing.
 */
async function checkResponses(url: string, apiKey: string, id: string, fields: string[]): Promise<void> {
  const problems: string[] = [];
  const expectFields = (what: string, body: unknown) => {
    const keys = Object.keys(body ?? {}).sort().join(',');
    if (keys !== fields.join(',')) problems.push(`${what}: fields ${keys}, expected ${fields.join(',')}`);
  };
  let writes = 0;
  const call = async (what: string, status: number, path: string, init: { method?: string; body?: string; anonymous?: true } = {}) => {
    const headers: Record<string, string> = init.anonymous ? {} : { authorization: `Bearer ${apiKey}` };
    if (init.body) Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': `bench-check-${++writes}` });
    const res = await fetch(`${url}${path}`, { method: init.method, body: init.body, headers });
    const text = await res.text();
    if (res.status !== status) problems.push(`${what}: status ${res.status}, expected ${status} (${text.slice(0, 300)})`);
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch {
      problems.push(`${what}: the body is not JSON (${text.slice(0, 300)})`);
      return {};
    }
  };
  const got = await call('get by id', 200, `/api/tickets/${id}`);
  expectFields('get by id', got);
  if (got.id !== id) problems.push(`get by id: returned id ${String(got.id)}`);
  const page = await call('list', 200, '/api/tickets?limit=100&offset=50');
  const items = page.items as unknown[] | undefined;
  if (items?.length !== 100 || page.limit !== 100 || page.offset !== 50 || page.hasMore !== true) {
    problems.push(`list: expected 100 items, limit 100, offset 50, hasMore true (got ${items?.length} items, ${page.limit}, ${page.offset}, ${page.hasMore})`);
  } else {
    expectFields('list item', items[0]);
  }
  const created = await call('create', 201, '/api/tickets', { method: 'POST', body: JSON.stringify({ title: 'Check', priority: 'high' }) });
  expectFields('create', created);
  if (created.title !== 'Check' || created.status !== 'open' || typeof created.createdAt !== 'string') {
    problems.push(`create: unexpected record ${JSON.stringify(created)}`);
  }
  const updated = await call('update', 200, `/api/tickets/${id}`, { method: 'PUT', body: JSON.stringify({ title: 'Checked', priority: 'low' }) });
  if (updated.title !== 'Checked' || updated.priority !== 'low' || updated.body !== got.body) problems.push(`update: unexpected record ${JSON.stringify(updated)}`);
  await call('get without the API key', 401, `/api/tickets/${id}`, { anonymous: true });
  await call('get a missing id', 404, '/api/tickets/01ARZ3NDEKTSV4RRFFQ69G5FAV');
  await call('create without a title', 400, '/api/tickets', { method: 'POST', body: JSON.stringify({ priority: 'high' }) });
  if (problems.length) throw new Error(`wrong responses:\n  ${problems.join('\n  ')}`);
}

function describe(r: RoundResult): string {
  const phase = r.round === 0 ? 'warm-up ' : `round ${r.round}`;
  const failures = r.non2xx + r.errors + r.timeouts;
  return `    ${OPERATION_LABELS[r.operation].padEnd(12)} ${phase}  ${Math.round(r.requestsPerSecond).toLocaleString('en-US').padStart(7)} req/s  ` +
    `p99 ${r.p99.toFixed(2).padStart(6)} ms  ${Math.round(r.serverCpuPerRequest).toString().padStart(5)} µs CPU/req  ` +
    `CPU server ${r.serverCpu.toFixed(2)} load ${r.loadCpu.toFixed(2)} other ${r.otherCpu.toFixed(2)}  ` +
    `RSS ${Math.round(r.serverRss / 1024 / 1024)} MB` +
    (failures ? `  (${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts)` : '');
}

async function load(plan: LoadPlan): Promise<RoundResult[]> {
  const child = startChild(ROOT, ['--import', 'tsx', 'bench/load.ts', JSON.stringify(plan)], {}, 'pipe', true);
  const rounds: RoundResult[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    process.stderr.write(`    ${chunk.toString().trimEnd().split('\n').join('\n    ')}\n`);
  });
  for await (const line of createInterface({ input: child.stdout! })) {
    const round = JSON.parse(line) as RoundResult;
    rounds.push(round);
    console.log(describe(round));
  }
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`the load generator failed (${code}):\n${stderr}`);
  return rounds;
}

/**
 * The same API key for every server: the generated app reads it from the variable the blueprint
 * names (and refuses to start in production without a session secret), the baselines from API_KEY.
 */
interface Credentials {
  apiKey: string;
  env: NodeJS.ProcessEnv;
}

async function measure(
  server: Server,
  seedFile: string,
  ids: string[],
  fields: string[],
  credentials: Credentials,
  phase: { name: string; operations: LoadPlan['operations']; resetDb?: true } = { name: server.key, operations: [...OPERATIONS] },
): Promise<RoundResult[]> {
  const dbFile = path.join(WORK, 'db', `${phase.name}.db`);
  fs.copyFileSync(seedFile, dbFile);
  const log = path.join(WORK, 'logs', `${phase.name}.log`);
  const logFd = fs.openSync(log, 'w');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = startChild(server.cwd, server.args, serverEnv(credentials, port, dbFile), logFd);
  try {
    await waitUntilAnswering(url, child, log);
    await checkResponses(url, credentials.apiKey, ids[0], fields);
    return await load({
      url,
      serverPid: child.pid!,
      apiKey: credentials.apiKey,
      idsFile: path.join(WORK, 'ids.json'),
      rows: TICKETS,
      ...settings,
      operations: phase.operations,
      resetDb: phase.resetDb ? dbFile : undefined,
    });
  } finally {
    await stop(child);
    fs.closeSync(logFd);
  }
}

function serverEnv(credentials: Credentials, port: number, dbFile: string): NodeJS.ProcessEnv {
  return { ...credentials.env, PORT: String(port), DATABASE_URL: `file:${dbFile}`, NODE_ENV: 'production' };
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
async function coldStart(server: Server, seedFile: string, credentials: Credentials): Promise<{ ms: number; probe: string }> {
  const dbFile = path.join(WORK, 'db', 'cold-start.db');
  fs.copyFileSync(seedFile, dbFile);
  const port = await freePort();
  let route = '/healthz';
  const log = path.join(WORK, 'logs', 'cold-start.log');
  const logFd = fs.openSync(log, 'w');
  const started = performance.now();
  const child = startChild(server.cwd, server.args, serverEnv(credentials, port, dbFile), logFd);
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

async function main(): Promise<void> {
  const began = Date.now();
  cleanWork();
  for (const dir of ['db', 'logs']) fs.mkdirSync(path.join(WORK, dir));
  console.log('generating the reference app and its production build, Prisma Client and the seeded database…');
  generateApp();
  buildApp();
  generatePrismaClient();
  const seedFile = path.join(WORK, 'seed.db');
  const { ids, columns } = seedDatabase(seedFile);
  fs.writeFileSync(path.join(WORK, 'ids.json'), JSON.stringify(ids));
  const fields = [...columns].sort();
  const apiKey = randomBytes(24).toString('hex');
  const credentials = { apiKey, env: { API_KEY: apiKey, [writerKeyEnv()]: apiKey, SESSION_SECRET: randomBytes(48).toString('base64') } };

  const rounds: Record<string, RoundResult[]> = {};
  for (const server of SERVERS) {
    console.log(`\n${server.label}`);
    rounds[server.key] = await measure(server, seedFile, ids, fields, credentials);
  }

  // Issue 4: what a command (policy, availableWhen, audit, idempotency, one transaction) costs
  // against the plain update of the same record, on the same server and data.
  const app = SERVERS.find((s) => s.key === APP) as Server;
  console.log(`\n${app.label}: command execution against the plain update`);
  const commandRounds = await measure(app, seedFile, ids, fields, credentials, { name: 'bp-app-commands', operations: [...COMMAND_OPERATIONS], resetDb: true });
  const best = (op: string) => Math.max(...commandRounds.filter((r) => r.operation === op && r.round > 0).map((r) => r.requestsPerSecond));
  const commandSummary =
    `Command execution (StartTicket: policy, availableWhen, audit, idempotency, one transaction) on the generated app: ` +
    `${Math.round(best('command')).toLocaleString('en-US')} req/s against ${Math.round(best('update')).toLocaleString('en-US')} req/s for the plain update of the same record: ` +
    `${(best('command') / best('update')).toFixed(2)}×.`;

  console.log(`\n${app.label}: ${COLD_STARTS} cold starts of the production build`);
  const starts: Array<{ ms: number; probe: string }> = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    starts.push(await coldStart(app, seedFile, credentials));
    console.log(`    ${Math.round(starts[i].ms)} ms to the first 200 on ${starts[i].probe}`);
  }
  const measured = footprint(starts, rounds);
  const footprintReport = footprintLines(measured);

  const report = buildReport(SERVERS, APP, [...OPERATIONS], rounds, settings, TARGETS);
  const results = { ...report, commands: commandRounds, footprint: measured };
  fs.writeFileSync(path.join(WORK, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  fs.writeFileSync(path.join(WORK, 'results.md'), `${markdownReport(report, APP)}\n${commandSummary}\n\n${footprintReport.join('\n')}\n`);
  console.log(consoleReport(report, APP));
  console.log(`\n${commandSummary}`);
  console.log(`\n${footprintReport.join('\n')}`);
  console.log(`\n${settings.connections} connections${settings.pinned ? ' (load generator on CPU 1)' : ''}, best of ${settings.rounds} rounds of ${settings.roundSeconds} s after ${settings.warmupSeconds} s of warm-up, per operation.`);
  console.log(`Written: bench/.work/results.json, bench/.work/results.md (${Math.round((Date.now() - began) / 1000)} s in all)`);

  const failed = Object.entries({ ...rounds, 'bp-app-commands': commandRounds }).flatMap(([key, rs]) => rs.filter((r) => r.non2xx + r.errors + r.timeouts > 0).map((r) => `${key} ${r.operation} round ${r.round}`));
  if (failed.length) {
    console.error(`\nINVALID: some requests failed, so these numbers do not compare like with like: ${failed.join(', ')}`);
    process.exitCode = 1;
  }
}

function abort(): void {
  for (const child of children) child.kill('SIGKILL');
}
process.on('SIGINT', () => {
  abort();
  process.exit(130);
});

try {
  await main();
} catch (err) {
  abort();
  console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
