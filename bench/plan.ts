// What bench/run.ts asks of bench/load.ts, and what comes back: shared by the two processes.

export const OPERATIONS = ['get', 'list', 'create', 'update'] as const;
/** The generated app only: a command (StartTicket) against the plain update of the same record. */
export const COMMAND_OPERATIONS = ['update', 'command'] as const;
/** The PostgreSQL section: every operation on every server, the command included. */
export const POSTGRES_OPERATIONS = [...OPERATIONS, 'command'] as const;
/** The PostgreSQL section's two instances of the generated app on one database: reads only. */
export const READ_OPERATIONS = ['get', 'list'] as const;
/**
 * The generated app only, after the command rounds: a skill action that starts a workflow
 * (escalate_ticket: 202 and a job).
 */
export type Operation = (typeof OPERATIONS)[number] | (typeof COMMAND_OPERATIONS)[number] | 'escalate';

/** One server of a load plan. */
export interface LoadTarget {
  /** Names the server's rounds in the results. */
  key: string;
  /**
   * The server: one URL per instance. autocannon opens connection i to urls[i % urls.length], so
   * the connections are spread evenly over the instances, each waiting for its own answers.
   */
  urls: string[];
  /** The server's processes (one per instance), whose CPU use and memory each round reports, summed. */
  serverPids: number[];
  /**
   * For 'command' (and 'escalate'): the server's database, a SQLite file or a postgres:// URL. Before every round
   * the tickets are set back to 'open' through a connection of the load generator's own, so each
   * round runs StartTicket on records it may start, each at most once; where the round could need
   * more tickets than there are, copies of seeded tickets are added first (load.ts, freshTicketsFor).
   */
  resetDb?: string;
}

export interface LoadPlan {
  /**
   * The servers measured, all running. With more than one, their rounds of an operation are
   * interleaved: every server's warm-up, then round 1 of each, round 2 of each (the order turned
   * by one each round), and so on, so that a server's rounds and another's are seconds apart
   * rather than minutes, and a machine that slows down for a while slows down both.
   */
  servers: LoadTarget[];
  /** PostgreSQL's postmaster: the CPU of it and its backends is reported as the database's. */
  databasePid?: number;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** JSON file holding the ids of the seeded tickets. */
  idsFile: string;
  /** For 'escalate': JSON file holding the ids of the seeded tickets that are open (its precondition). */
  openIdsFile?: string;
  /** Rows in the table when the run starts; list pages are drawn from them. */
  rows: number;
  connections: number;
  warmupSeconds: number;
  roundSeconds: number;
  rounds: number;
  operations: Operation[];
}

export interface RoundResult {
  /** The LoadTarget's key. */
  server: string;
  operation: Operation;
  round: number;
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  /** Milliseconds, from every response's own timing (autocannon's histogram rounds to whole ms). */
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /**
   * CPU used during the round, in cores (1 = one core busy all the time). A server well below 1
   * was held back by something else: the load generator, or other work on the machine.
   */
  serverCpu: number;
  /** Microseconds of server CPU per request: unlike requests/s, hardly moved by other work on the machine. */
  serverCpuPerRequest: number;
  loadCpu: number;
  /** PostgreSQL's processes, in cores, where the plan names its postmaster. */
  databaseCpu?: number;
  /** Microseconds of PostgreSQL CPU per request, where the plan names its postmaster. */
  databaseCpuPerRequest?: number;
  /** Everything else on the machine: above a few tenths, the round competed with other work. */
  otherCpu: number;
  /** The server's resident set size when the round ended, in bytes (NaN without /proc); summed over its instances. */
  serverRss: number;
  /** For 'command': the open tickets the round could use, each once. */
  freshRecords?: number;
}
