// The load generator, run by bench/run.ts in its own process so that it does not share an event
// loop with the servers it measures. For each operation: each server's warm-up (discarded), then
// the measured rounds, interleaved over the servers; one JSON line per round on stdout.
//
// Usage: node --import tsx bench/load.ts '<LoadPlan as JSON>'

import { readFileSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { commandTickets, type CommandTickets } from './command-tickets.ts';
import type { LoadPlan, LoadTarget, Operation, RoundResult } from './plan.ts';

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
function requestFor(operation: Operation, plan: LoadPlan, ids: string[], openIds: string[]): () => Request {
  const authorization = `Bearer ${plan.apiKey}`;
  const someId = () => ids[Math.floor(Math.random() * ids.length)];
  let n = 0;
  const writeHeaders = (i: number) => ({
    authorization,
    'content-type': 'application/json',
    'idempotency-key': `bench-${process.pid}-${operation}-${i}`,
  });
  switch (operation) {
    case 'get':
      return () => ({ method: 'GET', path: `/api/tickets/${someId()}`, headers: { authorization } });
    case 'list':
      return () => ({
        method: 'GET',
        path: `/api/tickets?limit=100&offset=${Math.floor(Math.random() * (plan.rows - 100))}`,
        headers: { authorization },
      });
    case 'create':
      return () => {
        const i = ++n;
        const body = {
          title: `Load ticket ${i}`,
          body: 'The printer on floor 3 is out of toner again.',
          priority: 'high',
        };
        return { method: 'POST', path: '/api/tickets', headers: writeHeaders(i), body: JSON.stringify(body) };
      };
    case 'update':
      return () => {
        const i = ++n;
        const body = { title: `Updated ticket ${i}`, priority: i % 2 ? 'low' : 'high' };
        return {
          method: 'PUT',
          path: `/api/tickets/${someId()}`,
          headers: writeHeaders(i),
          body: JSON.stringify(body),
        };
      };
    case 'escalate':
      // EscalateTicket's precondition wants an open ticket; escalating leaves it open, so any open
      // ticket may be escalated again.
      return () => {
        const i = ++n;
        const id = openIds[i % openIds.length];
        const body = JSON.stringify({ reason: `bench ${i}` });
        return { method: 'POST', path: `/api/skills/triage/tickets/${id}/escalate`, headers: writeHeaders(i), body };
      };
    case 'command':
      // Each ticket at most once per round: the reset reopens them all before every round, and
      // freshTicketsFor made the list long enough for the round. The cursor carries on from the
      // last round, which is no matter: every ticket is open again.
      return () => {
        const i = ++n;
        return {
          method: 'POST',
          path: `/api/commands/start_ticket/${ids[i % ids.length]}`,
          headers: writeHeaders(i),
          body: '{}',
        };
      };
  }
}

/**
 * How far the rate may exceed the fastest rate seen so far in this run (update or command, on any
 * server), for the tickets a command round may need: a command ran at 0.9 to 1.15× the update in
 * every recorded run, and a later round can be faster than the earlier ones.
 */
const RATE_MARGIN = 2;

/**
 * Makes `ids` long enough for a command round of `seconds` at RATE_MARGIN × `fastest` requests/s,
 * so that the round never meets a ticket it has already started (which would answer 409): adds
 * copies of seeded tickets (new ULIDs) through a second connection while the server is idle. The
 * number of tickets thus scales with the measured rate; on a slow machine none are added.
 */
async function freshTicketsFor(
  tickets: CommandTickets,
  ids: string[],
  fastest: number,
  seconds: number,
  connections: number,
): Promise<void> {
  const needed = Math.ceil(fastest * RATE_MARGIN * seconds) + connections;
  if (ids.length >= needed) return;
  const seeded = ids.length;
  await tickets.addCopies(ids, needed);
  console.error(
    `command rounds: ${needed - seeded} tickets added for up to ${Math.round(fastest * RATE_MARGIN)} req/s ` +
      `over ${seconds} s (${ids.length} in all)`,
  );
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

/** A process's /proc/<pid>/stat fields after the parenthesised command name (state is field 3), or undefined. */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds the processes have used so far (utime, field 14, and stime, 15), or NaN where /proc is not available. */
function processCpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const fields = statFields(pid);
    if (!fields) return NaN;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_SECOND;
}

/**
 * CPU seconds PostgreSQL has used so far: its postmaster, with the time of the children it has
 * reaped (cutime and cstime, fields 16 and 17), and every live child (ppid, field 4): a backend
 * per connection, the writers, the WAL writer, autovacuum. A backend that exits moves its time
 * from the live children's sum into the postmaster's reaped sum, so the total does not drop.
 */
function databaseCpuSeconds(postmaster: number): number {
  const own = statFields(postmaster);
  if (!own) return NaN;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_SECOND;
}

/** CPU seconds all processes on the machine have used so far (all cores), or NaN without /proc. */
function machineCpuSeconds(): number {
  try {
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is
    // already in user and nice, and steal is time this machine did not get.
    const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return (user + nice + system + irq + softirq) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : NaN;
}

async function round(
  plan: LoadPlan,
  target: LoadTarget,
  operation: Operation,
  seconds: number,
  next: () => Request,
): Promise<Omit<RoundResult, 'round'>> {
  const latencies: number[] = [];
  const databaseCpu = () => (plan.databasePid === undefined ? 0 : databaseCpuSeconds(plan.databasePid));
  const started = {
    wall: performance.now(),
    server: processCpuSeconds(target.serverPids),
    database: databaseCpu(),
    machine: machineCpuSeconds(),
    load: process.cpuUsage(),
  };
  const instance = autocannon({
    url: target.urls,
    connections: plan.connections,
    duration: seconds,
    requests: [{ setupRequest: (req) => ({ ...req, ...next() }) }],
  });
  instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  const result = await instance;
  const wall = (performance.now() - started.wall) / 1000;
  const serverSeconds = processCpuSeconds(target.serverPids) - started.server;
  const databaseSeconds = databaseCpu() - started.database;
  const machineSeconds = machineCpuSeconds() - started.machine;
  const usage = process.cpuUsage(started.load);
  const loadSeconds = (usage.user + usage.system) / 1e6;
  const sorted = Float64Array.from(latencies).sort();
  return {
    server: target.key,
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
    ...(plan.databasePid === undefined
      ? {}
      : {
          databaseCpu: databaseSeconds / wall,
          databaseCpuPerRequest: (databaseSeconds * 1e6) / result.requests.total,
        }),
    otherCpu: Math.max(0, machineSeconds - serverSeconds - databaseSeconds - loadSeconds) / wall,
    serverRss: target.serverPids.reduce((sum, pid) => sum + residentBytes(pid), 0),
  };
}

/** A server's state across the rounds: its tickets and the fastest update or command round so far. */
interface Driven {
  target: LoadTarget;
  /** The seeded tickets' ids, and the copies added for command rounds to this server's database. */
  ids: string[];
  tickets: CommandTickets | undefined;
  /** This server's fastest update or command round so far (the fastest of all sizes the tickets). */
  fastest: number;
}

/** The servers in the order of round `r` (1-based): turned by one each round. */
function turned<T>(items: T[], r: number): T[] {
  const by = (r - 1) % items.length;
  return [...items.slice(by), ...items.slice(0, by)];
}

async function main(plan: LoadPlan): Promise<void> {
  const seeded = JSON.parse(readFileSync(plan.idsFile, 'utf8')) as string[];
  const openIds = plan.openIdsFile ? (JSON.parse(readFileSync(plan.openIdsFile, 'utf8')) as string[]) : [];
  const servers: Driven[] = plan.servers.map((target) => ({
    target,
    ids: [...seeded],
    tickets: target.resetDb === undefined ? undefined : commandTickets(target.resetDb),
    fastest: 0,
  }));
  for (const operation of plan.operations) {
    const nexts = new Map(servers.map((s) => [s, requestFor(operation, plan, s.ids, openIds)]));
    const run = async (server: Driven, seconds: number, r: number) => {
      const { tickets } = server;
      let freshRecords: number | undefined;
      if (operation === 'command' && tickets) {
        // Sized by the fastest server, for every server alike: each command round then runs on a
        // table of the same size, not a larger one for a faster server.
        const fastest = Math.max(...servers.map((s) => s.fastest));
        await freshTicketsFor(tickets, server.ids, fastest, seconds, plan.connections);
        await tickets.reopen();
        freshRecords = server.ids.length;
      }
      // The command rounds before it left tickets started: escalation wants them open.
      if (operation === 'escalate' && tickets) await tickets.reopen();
      const result = {
        ...(await round(plan, server.target, operation, seconds, nexts.get(server)!)),
        round: r,
        freshRecords,
      };
      if (operation === 'update' || operation === 'command')
        server.fastest = Math.max(server.fastest, result.requestsPerSecond);
      if (freshRecords !== undefined && result.requests > freshRecords) {
        console.error(
          `${server.target.key}, command round ${r}: ${result.requests} requests on ${freshRecords} open tickets, ` +
            'so some met a started one',
        );
      }
      console.log(JSON.stringify(result));
    };
    for (const server of servers) await run(server, plan.warmupSeconds, 0);
    for (let r = 1; r <= plan.rounds; r++)
      for (const server of turned(servers, r)) await run(server, plan.roundSeconds, r);
  }
}

await main(JSON.parse(process.argv[2] ?? '{}') as LoadPlan);
