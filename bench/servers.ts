// Running a server under test: start its process(es), wait until it answers, check its responses,
// drive it from the load generator (bench/load.ts, a process of its own), stop it. Shared by the
// SQLite and the PostgreSQL sections; every child process started here is stopped on failure too.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../bin/dev/free-port.ts';
import { checkResponses } from './check.ts';
import type { LoadPlan, Operation, RoundResult } from './plan.ts';
import { ROOT, TICKETS, WORK } from './prepare.ts';
import { OPERATION_LABELS, type ServerInfo, type Settings } from './report.ts';

export interface Server extends ServerInfo {
  cwd: string;
  /** node's arguments. */
  args: string[];
}

/**
 * The same API key for every server: the generated app reads it from the variable the blueprint
 * names (and refuses to start in production without a session secret), the baselines from API_KEY.
 */
export interface Credentials {
  apiKey: string;
  env: NodeJS.ProcessEnv;
}

/** What every server of a run is measured with; `idsFile` holds the seeded tickets' ids. */
export interface RunContext {
  settings: Settings;
  credentials: Credentials;
  ids: string[];
  idsFile: string;
}

export const baseline = (script: string) => ['--import', 'tsx', `bench/baselines/${script}`];

function seconds(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!(value > 0)) throw new Error(`${name} must be a positive number (got "${raw}")`);
  return value;
}

/**
 * The load generator runs on CPU 1 when the machine has two CPUs and taskset (util-linux) is
 * installed. Left to the scheduler, it sometimes shared a core with the server's main thread, and
 * on this 2-core machine that swung a server's numbers by about 30 % between runs. The server is
 * not pinned: pinned to one core, its JIT and GC threads compete with its main thread, which hurt
 * the Prisma baseline (a large WebAssembly query compiler to warm up) far more than the others.
 */
const TASKSET = os.availableParallelism() >= 2 && spawnSync('taskset', ['-c', '1', 'true']).status === 0;

/** Settings from the environment: BENCH_WARMUP_SECONDS (5), BENCH_ROUND_SECONDS (3), BENCH_ROUNDS (3, at least 2). */
export function benchSettings(): Settings {
  return {
    tickets: TICKETS,
    connections: 32,
    warmupSeconds: seconds('BENCH_WARMUP_SECONDS', 5),
    roundSeconds: seconds('BENCH_ROUND_SECONDS', 3),
    rounds: Math.max(2, Math.floor(seconds('BENCH_ROUNDS', 3))),
    pinned: TASKSET,
  };
}

/** Children still running, so that an interrupted or failed run leaves no server behind. */
const children = new Set<ChildProcess>();

export function killChildren(): void {
  for (const child of children) child.kill('SIGKILL');
}

export function startChild(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  stdio: 'pipe' | number,
  pin = false,
): ChildProcess {
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

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** The last lines of a server's log, for an error message that says why it failed. */
function logTail(log: string): string {
  const lines = fs.readFileSync(log, 'utf8').trimEnd().split('\n').slice(-6);
  return lines[0] ? `\n${lines.map((l) => `  ${l.slice(0, 300)}`).join('\n')}` : '';
}

async function waitUntilAnswering(url: string, child: ChildProcess, log: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  const where = path.relative(ROOT, log);
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`the server exited with ${child.exitCode}; see ${where}${logTail(log)}`);
    try {
      // Any answer will do: the API refuses this unauthenticated request once it is up.
      await (await fetch(`${url}/api/tickets?limit=1`)).arrayBuffer();
      return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  throw new Error(`the server did not answer within 30 s; see ${where}${logTail(log)}`);
}

function describe(r: RoundResult, several: boolean): string {
  const phase = r.round === 0 ? 'warm-up ' : `round ${r.round}`;
  const failures = r.non2xx + r.errors + r.timeouts;
  const server = several ? `${r.server.padEnd(20)} ` : '';
  const rate = Math.round(r.requestsPerSecond).toLocaleString('en-US').padStart(7);
  const cpuPerRequest = Math.round(r.serverCpuPerRequest).toString().padStart(5);
  const databaseCpu = r.databaseCpu === undefined ? '' : ` db ${r.databaseCpu.toFixed(2)}`;
  return (
    `    ${server}${OPERATION_LABELS[r.operation].padEnd(12)} ${phase}  ${rate} req/s  ` +
    `p99 ${r.p99.toFixed(2).padStart(6)} ms  ${cpuPerRequest} µs CPU/req  ` +
    `CPU server ${r.serverCpu.toFixed(2)}${databaseCpu} load ${r.loadCpu.toFixed(2)} other ${r.otherCpu.toFixed(2)}  ` +
    `RSS ${Math.round(r.serverRss / 1024 / 1024)} MB` +
    (failures ? `  (${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts)` : '')
  );
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
    console.log(describe(round, plan.servers.length > 1));
  }
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`the load generator failed (${code}):\n${stderr}`);
  return rounds;
}

export function serverEnv(credentials: Credentials, port: number, databaseUrl: string): NodeJS.ProcessEnv {
  return { ...credentials.env, PORT: String(port), DATABASE_URL: databaseUrl, NODE_ENV: 'production' };
}

/** One log file per process, named for what it runs: bench/.work/logs/<name>.log. */
function openLog(name: string): { log: string; fd: number } {
  const log = path.join(WORK, 'logs', `${name}.log`);
  return { log, fd: fs.openSync(log, 'w') };
}

/** A server to start: `instances` processes of it on one database, their logs named for `name`. */
export interface Launch {
  server: Server;
  name: string;
  databaseUrl: string;
  instances: number;
}

/** A started server's instances: their URLs and pids. */
export interface Running {
  urls: string[];
  pids: number[];
}

/**
 * Starts every launch's processes, one at a time, waits until each answers, and runs `use` with
 * them, in the launches' order; stops them all afterwards, whatever happens.
 */
export async function withServers<T>(
  launches: Launch[],
  credentials: Credentials,
  use: (running: Running[]) => Promise<T>,
): Promise<T> {
  const children: Array<{ child: ChildProcess; fd: number }> = [];
  try {
    const running: Running[] = [];
    for (const { server, name, databaseUrl, instances } of launches) {
      const started: Running = { urls: [], pids: [] };
      for (let i = 0; i < instances; i++) {
        const { log, fd } = openLog(instances === 1 ? name : `${name}-${i + 1}`);
        const port = await freePort();
        const child = startChild(server.cwd, server.args, serverEnv(credentials, port, databaseUrl), fd);
        children.push({ child, fd });
        const url = `http://127.0.0.1:${port}`;
        // One at a time: an app applies its migrations at start, and the next one then finds them applied.
        await waitUntilAnswering(url, child, log);
        started.urls.push(url);
        started.pids.push(child.pid!);
      }
      running.push(started);
    }
    return await use(running);
  } finally {
    for (const { child, fd } of children) {
      await stop(child);
      fs.closeSync(fd);
    }
  }
}

/** Starts `instances` processes of one server on one database: `withServers` for one. */
export async function withServer<T>(
  server: Server,
  name: string,
  databaseUrl: string,
  credentials: Credentials,
  instances: number,
  use: (urls: string[], pids: number[]) => Promise<T>,
): Promise<T> {
  return withServers([{ server, name, databaseUrl, instances }], credentials, ([one]) => use(one.urls, one.pids));
}

export interface Measurement {
  server: Server;
  /** Names the log files. */
  name: string;
  databaseUrl: string;
  /** The Ticket columns: the fields every answer must have. */
  fields: string[];
  operations: Operation[];
  /** Processes of the server on the one database, the load spread evenly over them (1 unless said). */
  instances?: number;
  /** For 'command': the database the load generator reopens the tickets in (LoadPlan.resetDb). */
  resetDb?: string;
  /** For 'escalate': the open tickets' ids (LoadPlan.openIdsFile). */
  openIdsFile?: string;
  /** Runs once the load is done, while the server still runs (to let its jobs finish, say). */
  afterLoad?: () => Promise<void>;
  databasePid?: number;
  /** Also check StartTicket before the load. */
  checkCommand?: boolean;
  /** Whether the record the check created is in the database under test: proof that the server uses it. */
  stored?: (id: string) => Promise<boolean>;
}

/** Starts the server, checks its responses, measures the operations, and stops it. */
export async function measureServer(ctx: RunContext, m: Measurement): Promise<RoundResult[]> {
  return (await measureServers(ctx, [m]))[m.name];
}

/**
 * Starts every server at once, checks each one's responses, measures the operations on all of
 * them, their rounds interleaved (LoadPlan.servers), and stops them; every measurement names the
 * same operations. Answers each server's rounds by its measurement's name.
 */
export async function measureServers(ctx: RunContext, ms: Measurement[]): Promise<Record<string, RoundResult[]>> {
  const operations = ms[0].operations;
  if (ms.some((m) => m.operations.join() !== operations.join()))
    throw new Error('servers measured together take the same operations');
  const launches = ms.map((m) => ({
    server: m.server,
    name: m.name,
    databaseUrl: m.databaseUrl,
    instances: m.instances ?? 1,
  }));
  return withServers(launches, ctx.credentials, async (running) => {
    for (const [i, m] of ms.entries()) {
      for (const url of running[i].urls) {
        const created = await checkResponses(
          url,
          ctx.credentials.apiKey,
          ctx.ids[0],
          m.fields,
          m.checkCommand ?? false,
        );
        if (m.stored && !(await m.stored(created)))
          throw new Error(`${url}: the record it created is not in the database under test`);
      }
    }
    const rounds = await load({
      servers: ms.map((m, i) => ({
        key: m.name,
        urls: running[i].urls,
        serverPids: running[i].pids,
        resetDb: m.resetDb,
      })),
      databasePid: ms[0].databasePid,
      apiKey: ctx.credentials.apiKey,
      idsFile: ctx.idsFile,
      openIdsFile: ms[0].openIdsFile,
      rows: TICKETS,
      ...ctx.settings,
      operations,
    });
    for (const m of ms) await m.afterLoad?.();
    return Object.fromEntries(ms.map((m) => [m.name, rounds.filter((r) => r.server === m.name)]));
  });
}
