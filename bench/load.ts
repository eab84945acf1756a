// The load generator, run by bench/run.ts in its own process so that it does not share an event
// loop with the server it measures. For each operation: a warm-up (discarded), then the measured
// rounds; one JSON line per round on stdout.
//
// Usage: node --import tsx bench/load.ts '<LoadPlan as JSON>'

import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
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
      // Each ticket once per round (the reset reopens them): StartTicket is available on every one.
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
  };
}

async function main(plan: LoadPlan): Promise<void> {
  const ids = JSON.parse(readFileSync(plan.idsFile, 'utf8')) as string[];
  for (const operation of plan.operations) {
    const next = requestFor(operation, plan, ids);
    const reset = () => {
      if (operation === 'command' && plan.resetDb) reopenTickets(plan.resetDb);
    };
    reset();
    const warmup = await round(plan, operation, plan.warmupSeconds, next);
    console.log(JSON.stringify({ ...warmup, round: 0 }));
    for (let r = 1; r <= plan.rounds; r++) {
      reset();
      console.log(JSON.stringify({ ...(await round(plan, operation, plan.roundSeconds, next)), round: r }));
    }
  }
}

await main(JSON.parse(process.argv[2] ?? '{}') as LoadPlan);
