// The group commit of PostgreSQL's driver (data/postgres.ts): writes that are one statement each,
// committed on their own (a create; on PostgreSQL 18 an update or a command whose checks the
// database makes), from different units of work, sent in one turn of the event loop, go as one
// transaction on one connection, in one round trip: BEGIN, each statement inside a savepoint of
// its own, COMMIT. PostgreSQL then wakes once for the group, not once per write, and writes one
// commit record for it; the app writes and reads one socket. A bench of the update's statement
// (32 writers, 10 connections) measured PostgreSQL's CPU per write at about half, the driver's
// at about two fifths, and twice the writes per second (bench/README.md, "Runs on PostgreSQL").
//
// Each write keeps the outcome it would have alone: the statements run one after the other, as
// they would on their own, each at READ COMMITTED on a snapshot of its own, and a statement that
// fails is rolled back to its savepoint alone: the group carries on without it in a second round
// trip (the server skipped what followed it). Every answer waits for the COMMIT, so a write is
// acknowledged only once it is durable. When the group's connection is lost, every write in it
// fails as a write alone would (nothing committed, or, lost during the COMMIT, nobody can say);
// when the group fails otherwise (its COMMIT refused), it is rolled back and each write not yet
// failed runs again alone.
//
// A group holds the row locks its statements took until its COMMIT, so a statement of the group
// that waits for a lock could hold up writers that wait for the group: its waits are bounded by
// `lock_timeout` (GROUP_LOCK_TIMEOUT), and a statement that reaches the bound steps out of the
// group, rolled back to its savepoint, to run again alone once the group has committed, waiting as
// long as it must (up to the statement timeout), as it would have without the group. Two groups
// thus never wait on each other in a cycle for longer than the bound.

import type pg from 'pg';
import type { Outcome, Prepared } from './postgres.ts';
import type { Result, Wire, WireValue } from './postgres-wire.ts';
import { SkippedStatement } from './postgres-wire.ts';

/** Writes per group at most: each savepoint is a subtransaction, and PostgreSQL keeps 64 per transaction in memory. */
export const MAX_GROUP = 32;

/** How long a grouped statement waits for a lock held outside its group before it steps out. */
export const GROUP_LOCK_TIMEOUT = '50ms';

/** A connection lent to one group: its wire, and how to give it back (destroyed when broken). */
export interface Link {
  wire: Wire;
  done(broken: unknown): Promise<void>;
}

/** What the group needs of the driver. */
export interface GroupHost {
  /** A pooled connection, its wire started for a unit of work. */
  connect(): Promise<Link>;
  /** A statement's text in PostgreSQL's form and its name, as the driver prepares it. */
  statement(sql: string): Prepared;
  /** A statement's answer as an outcome (a failure mapped to the app's errors). */
  sent(answer: Promise<Result>, mode: Write['mode']): Promise<Outcome>;
  /** The outcome of a failure outside any statement: a connection the pool could not give. */
  failed(err: unknown): Outcome;
}

/** A write waiting for its group. */
interface Write {
  prepared: Prepared;
  mode: 'get' | 'all' | 'run';
  values: WireValue[];
  answer: (outcome: Outcome) => void;
}

/** Where a write of the group stands after a round trip. */
type Standing =
  | { state: 'pending' }
  | { state: 'done'; outcome: Outcome }
  | { state: 'failed'; outcome: Outcome }
  | { state: 'alone' };

const SAVEPOINT = 'SAVEPOINT bp_write';
const RELEASE = 'RELEASE SAVEPOINT bp_write';
const ROLLBACK_TO = 'ROLLBACK TO SAVEPOINT bp_write';
const LOCK_TIMEOUT = `SET LOCAL lock_timeout = '${GROUP_LOCK_TIMEOUT}'`;

export class GroupCommit {
  private waiting: Write[] = [];
  private scheduled = false;

  constructor(private readonly host: GroupHost) {}

  /**
   * Runs `prepared` with `values` as a write committed on its own, with the others sent in the
   * same turn; resolves, never rejects, with its outcome once its group has committed or failed.
   */
  add(prepared: Prepared, mode: Write['mode'], values: WireValue[]): Promise<Outcome> {
    return new Promise<Outcome>((answer) => {
      this.waiting.push({ prepared, mode, values, answer });
      if (this.scheduled) return;
      this.scheduled = true;
      // After this turn's I/O callbacks: the writes of the requests read in this turn join.
      setImmediate(this.flush);
    });
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const waiting = this.waiting;
    this.waiting = [];
    for (let i = 0; i < waiting.length; i += MAX_GROUP) void this.run(waiting.slice(i, i + MAX_GROUP));
  };

  /** Runs one group; every write in it is answered, whatever happens. */
  private async run(group: Write[]): Promise<void> {
    if (group.length === 1) return this.runAlone(group[0]);
    let link: Link;
    try {
      link = await this.host.connect();
    } catch (err) {
      for (const write of group) write.answer(this.host.failed(err));
      return;
    }
    const { standings, broken } = await this.commitTogether(link.wire, group);
    await link.done(broken);
    const again: Write[] = [];
    group.forEach((write, i) => {
      const standing = standings[i];
      if (standing.state === 'done' || standing.state === 'failed') write.answer(standing.outcome);
      else again.push(write);
    });
    // Each write that stepped out (it waited for a lock past the bound) runs alone, as it would
    // have without the group; they do not wait for one another.
    await Promise.all(again.map((write) => this.runAlone(write)));
  }

  /** Runs a write as its own transaction, committed at its Sync: no BEGIN, no savepoint. */
  private async runAlone(write: Write): Promise<void> {
    let link: Link;
    try {
      link = await this.host.connect();
    } catch (err) {
      write.answer(this.host.failed(err));
      return;
    }
    const { text, name } = write.prepared;
    const answer = this.host.sent(link.wire.send(text, name, write.values, true), write.mode);
    link.wire.flush(false);
    const outcome = await answer;
    await link.done(outcome.ok ? undefined : outcome.broken);
    write.answer(outcome);
  }

  /**
   * The group's transaction: its first round trip, then one more after each statement that
   * failed, until COMMIT answers or the group fails as such. Every write then stands done,
   * failed or alone (to run again); `broken` says why the connection cannot be used again.
   */
  private async commitTogether(wire: Wire, group: Write[]): Promise<{ standings: Standing[]; broken: unknown }> {
    const standings: Standing[] = group.map(() => ({ state: 'pending' }));
    let opening = [this.control(wire, 'BEGIN'), this.utility(wire, LOCK_TIMEOUT)];
    for (;;) {
      const pending = group.flatMap((write, i) => (standings[i].state === 'pending' ? [i] : []));
      const steps = pending.map((i) => ({
        i,
        save: this.utility(wire, SAVEPOINT),
        statement: this.host.sent(this.queue(wire, group[i]), group[i].mode),
        release: this.utility(wire, RELEASE),
      }));
      const commit = this.control(wire, 'COMMIT');
      wire.flush(true);
      const fault = await firstFault([...opening, ...steps.flatMap((s) => [s.save, s.release])]);
      let failedOne = false;
      for (const step of steps) {
        const outcome = await step.statement;
        if (outcome.ok) {
          standings[step.i] = { state: 'done', outcome };
          continue;
        }
        if (skipped(outcome)) break;
        // The statement failed on its own: it alone is rolled back, the rest goes again.
        standings[step.i] = steppedOut(outcome) ? { state: 'alone' } : { state: 'failed', outcome };
        failedOne = true;
        break;
      }
      const committed = await commit;
      const broken = fault?.broken ?? firstBroken(standings) ?? (committed.ok ? undefined : committed.broken);
      if (broken === undefined && fault === undefined) {
        if (committed.ok && committed.command === 'COMMIT') return { standings, broken };
        if (failedOne) {
          // Undo the failed statement, then send the rest and COMMIT again.
          opening = [this.utility(wire, ROLLBACK_TO), this.utility(wire, RELEASE)];
          continue;
        }
      }
      if (broken === undefined) {
        // The group failed as such, its connection intact (a statement of its own or its COMMIT
        // refused): nothing of it committed, so each write not yet failed runs again alone.
        const standing = (s: Standing): Standing => (s.state === 'failed' ? s : { state: 'alone' });
        return { standings: standings.map(standing), broken: await wire.rollBack() };
      }
      // The connection was lost: nothing of the group committed (or, lost during the COMMIT, nobody
      // can say, as for a write alone), and every write fails with why.
      const failure = fault ?? (committed.ok || skipped(committed) ? this.host.failed(broken) : committed);
      return { standings: standings.map(() => ({ state: 'failed', outcome: failure })), broken };
    }
  }

  private queue(wire: Wire, write: Write): Promise<Result> {
    return wire.send(write.prepared.text, write.prepared.name, write.values, false);
  }

  private control(wire: Wire, verb: 'BEGIN' | 'COMMIT'): Promise<Outcome> {
    return this.host.sent(wire.control(verb, false), 'run');
  }

  private utility(wire: Wire, sql: string): Promise<Outcome> {
    const { text, name } = this.host.statement(sql);
    return this.host.sent(wire.send(text, name, [], false), 'run');
  }
}

/**
 * The first failure among a group's own statements (BEGIN, the lock timeout, the savepoints) that
 * was not merely skipped after a write's failure: the group cannot go on.
 */
async function firstFault(outcomes: Array<Promise<Outcome>>): Promise<Extract<Outcome, { ok: false }> | undefined> {
  for (const outcome of await Promise.all(outcomes)) if (!outcome.ok && !skipped(outcome)) return outcome;
  return undefined;
}

/** Whether the server skipped the statement after an earlier one of its round trip failed. */
function skipped(outcome: Extract<Outcome, { ok: false }>): boolean {
  return outcome.failure instanceof SkippedStatement;
}

/** Whether a write failed because it waited for a lock past GROUP_LOCK_TIMEOUT (55P03): it runs again alone. */
function steppedOut(outcome: Extract<Outcome, { ok: false }>): boolean {
  const cause = (outcome.failure as { cause?: unknown } | null)?.cause as pg.DatabaseError | undefined;
  return cause?.code === '55P03';
}

function firstBroken(standings: Standing[]): unknown {
  for (const s of standings) {
    if (s.state === 'failed' && !s.outcome.ok && s.outcome.broken !== undefined) return s.outcome.broken;
  }
  return undefined;
}
