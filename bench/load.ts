// The load generator, run by bench/run.ts in its own process so that it does not share an event
// loop with the server it measures. For each operation: a warm-up (discarded), then the measured
// rounds; one JSON line per round on stdout.
//
// Usage: node --import tsx bench/load.ts '<LoadPlan as JSON>'

import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { ulid } from '../runtime-lib/core/ids.ts';
import type { LoadPlan, Operation, RoundResult } from './plan.ts';

interface Request {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * Each server is called as one API client: every request carries the API key, and every write a
 * fresh Idempotency-Key (the generated app requires one on API-key writes; the baselines ignore it).
 */
function requestFor(operation: Operation, plan: LoadPlan, ids: string[]): () => Request {
  const authorization = `Bearer ${plan.apiKey}`;
  const someId = () => ids[Math.floor(Math.random() * ids.length)];
  let n = 0;
  const writeHeaders = (i: number) => ({ authorization, 'content-type': 'application/json', 'idempotency-key': `bench-${process.pid}-${operation}-${i}` });
  switch (operation) {
    case 'get':
      return () => ({ method: 'GET', path: `/api/tickets/${someId()}`, headers: { authorization } });
    case 'list':
      return () => ({ method: 'GET', path: `/api/tickets?limit=100&offset=${Math.floor(Math.random() * (plan.rows - 100))}`, headers: { authorization } });
    case 'create':
      return () => {
        const i = ++n;
        const body = { title: `Load ticket ${i}`, body: 'The printer on floor 3 is out of toner again.', priority: 'high' };
        return { method: 'POST', path: '/api/tickets', headers: writeHeaders(i), body: JSON.stringify(body) };
      };
    case 'update':
      return () => {
        const i = ++n;
        const body = { title: `Updated ticket ${i}`, priority: i % 2 ? 'low' : 'high' };
        return { method: 'PUT', path: `/api/tickets/${someId()}`, headers: writeHeaders(i), body: JSON.stringify(body) };
      };
    case 'command':
      // Each ticket at most once per round: the reset reopens them all before every round, and
      // freshTicketsFor made the list long enough for the round. The cursor carries on from the
      // last round, which is no matter: every ticket is open again.
      return () => {
        const i = ++n;
        return { method: 'POST', path: `/api/commands/start_ticket/${ids[i % ids.length]}`, headers: writeHeaders(i), body: '{}' };
      };
  }
}

/** Reopens every ticket between command rounds, while the server is idle. */
function reopenTickets(file: string): void {
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  db.prepare('UPDATE "Ticket" SET "status" = \'open\', "assigneeId" = NULL').run();
  db.close();
}

/**
 * How far the rate may exceed the fastest rate seen so far in this run (update or command, on the
 * same server), for the tickets a command round may need: a command ran at 0.9 to 1.15× the update
 * in every recorded run, and a later round can be faster than the earlier ones.
 */
const RATE_MARGIN = 2;

/**
 * Makes `ids` long enough for a command round of `seconds` at RATE_MARGIN × `fastest` requests/s,
 * so that the round never meets a ticket it has already started (which would answer 409): adds
 * copies of seeded tickets (new ULIDs) through a second connection while the server is idle. The
 * number of tickets thus scales with the measured rate; on a slow machine none are added.
 */
function freshTicketsFor(file: string, ids: string[], fastest: number, seconds: number, connections: number): void {
  const needed = Math.ceil(fastest * RATE_MARGIN * seconds) + connections;
  if (ids.length >= needed) return;
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  const columns = db.prepare<[], string>('SELECT name FROM pragma_table_info(\'Ticket\') WHERE name <> \'id\'').pluck().all().map((c) => `"${c}"`).join(', ');
  const copy = db.prepare(`INSERT INTO "Ticket" ("id", ${columns}) SELECT ?, ${columns} FROM "Ticket" WHERE "id" = ?`);
  const seeded = ids.length;
  db.transaction(() => {
    for (let i = seeded; i < needed; i++) {
      const id = ulid();
      copy.run(id, ids[i % seeded]);
      ids.push(id);
    }
  })();
  db.close();
  console.error(`command rounds: ${needed - seeded} tickets added for up to ${Math.round(fastest * RATE_MARGIN)} req/s over ${seconds} s (${ids.length} in all)`);
}

/** The resident set size of a process in bytes, or NaN where /proc is not available. */
function residentBytes(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? NaN : Number(kb) * 1024;
  } catch {
    return NaN;
  }
}

/** Linux reports process CPU time in clock ticks of 1/100 s (USER_HZ) on every common platform. */
const TICKS_PER_SECOND = 100;

/** CPU seconds the server process has used so far, or NaN where /proc is not available. */
function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name: state is field 3, utime 14 and stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** CPU seconds all processes on the machine have used so far (all cores), or NaN without /proc. */
function machineCpuSeconds(): number {
  try {
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is
    // already in user and nice, and steal is time this machine did not get.
    const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return (user + nice + system + irq + softirq) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : NaN;
}

async function round(plan: LoadPlan, operation: Operation, seconds: number, next: () => Request): Promise<Omit<RoundResult, 'round'>> {
  const latencies: number[] = [];
  const started = { wall: performance.now(), server: processCpuSeconds(plan.serverPid), machine: machineCpuSeconds(), load: process.cpuUsage() };
  const instance = autocannon({
    url: plan.url,
    connections: plan.connections,
    duration: seconds,
    requests: [{ setupRequest: (req) => ({ ...req, ...next() }) }],
  });
  instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  const result = await instance;
  const wall = (performance.now() - started.wall) / 1000;
  const serverSeconds = processCpuSeconds(plan.serverPid) - started.server;
  const machineSeconds = machineCpuSeconds() - started.machine;
  const usage = process.cpuUsage(started.load);
  const loadSeconds = (usage.user + usage.system) / 1e6;
  const sorted = Float64Array.from(latencies).sort();
  return {
    operation,
    requests: result.requests.total,
    seconds: result.duration,
    requestsPerSecond: result.requests.total / result.duration,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    serverCpu: serverSeconds / wall,
    serverCpuPerRequest: (serverSeconds * 1e6) / result.requests.total,
    loadCpu: loadSeconds / wall,
    otherCpu: Math.max(0, machineSeconds - serverSeconds - loadSeconds) / wall,
    serverRss: residentBytes(plan.serverPid),
  };
}

async function main(plan: LoadPlan): Promise<void> {
  const ids = JSON.parse(readFileSync(plan.idsFile, 'utf8')) as string[];
  /** The fastest update or command round so far: what sizes the tickets of a command round. */
  let fastest = 0;
  for (const operation of plan.operations) {
    const next = requestFor(operation, plan, ids);
    const run = async (seconds: number, r: number) => {
      let freshRecords: number | undefined;
      if (operation === 'command' && plan.resetDb) {
        freshTicketsFor(plan.resetDb, ids, fastest, seconds, plan.connections);
        reopenTickets(plan.resetDb);
        freshRecords = ids.length;
      }
      const result = { ...(await round(plan, operation, seconds, next)), round: r, freshRecords };
      if (operation === 'update' || operation === 'command') fastest = Math.max(fastest, result.requestsPerSecond);
      if (freshRecords !== undefined && result.requests > freshRecords) {
        console.error(`command round ${r}: ${result.requests} requests on ${freshRecords} open tickets, so some met a started one`);
      }
      console.log(JSON.stringify(result));
    };
    await run(plan.warmupSeconds, 0);
    for (let r = 1; r <= plan.rounds; r++) await run(plan.roundSeconds, r);
  }
}

await main(JSON.parse(process.argv[2] ?? '{}') as LoadPlan);
