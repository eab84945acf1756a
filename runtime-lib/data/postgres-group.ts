// The group commit of PostgreSQL's driver (data/postgres.ts): writes that are one statement each,
// committed on their own (a create; on PostgreSQL 18 an update or a command whose checks the
// database makes), from different units of work, sent in one turn of the event loop, go as one
// transaction on one connection, in one round trip: BEGIN (with the bound on lock waits below),
// the statements, COMMIT, pipelined (data/postgres-connection.ts). PostgreSQL then wakes once for
// the group's commit, not once per write, and writes one commit record for it; the app writes and
// reads one connection. A bench of the update's statement (32 writers, 10 connections) measured
// PostgreSQL's CPU per write at about half, the driver's at about two fifths, and twice the writes
// per second (bench/README.md, "Runs on PostgreSQL").
//
// Each write keeps the outcome it would have alone: the statements run one after the other, as
// they would on their own, each at READ COMMITTED on a snapshot of its own, and every answer waits
// for the COMMIT, so a write is acknowledged only once it is durable. A statement that fails takes
// the group's transaction with it (the server refuses the statements after it, and the COMMIT
// pipelined behind them rolls back): the others go again, without it, in a new round trip, and it
// runs again alone once they have committed, so that its answer is what it does alone (it may
// have failed only because of a write of its group that the retry no longer makes). When the
// group's connection is lost, every write in it fails as a write alone would (nothing committed,
// or, lost during the COMMIT, nobody can say); when its COMMIT is refused, each write runs again
// alone.
//
// A group holds the row locks its statements took until its COMMIT, so a statement of the group
// that waits for a lock could hold up writers that wait for the group: its waits are bounded by
// `lock_timeout` (GROUP_LOCK_TIMEOUT), and a statement that reaches the bound steps out of the
// group as any failing statement does, to run again alone once the group has committed, waiting
// as long as it must (up to the statement timeout), as it would have without the group. Two
// groups thus never wait on each other in a cycle for longer than the bound.

import { type Connection, type Outcome, type Result, SkippedStatement } from './postgres-connection.ts';
import type { Prepared, WireValue } from './postgres-statements.ts';

/**
 * Writes per group at most: a failed statement costs the group a round trip, with every write
 * still in it run again, so a group is kept small enough that this stays cheap.
 */
export const MAX_GROUP = 32;

/** How long a grouped statement waits for a lock held outside its group before it steps out. */
export const GROUP_LOCK_TIMEOUT = '50ms';

/** A connection lent to one group, and how to give it back (destroyed when broken). */
export interface Link {
  pooled: Connection;
  done(broken: unknown): Promise<void>;
}

/** What the group needs of the driver. */
export interface GroupHost {
  /** A pooled connection. */
  connect(): Promise<Link>;
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

/** A statement's failure. */
type Failure = Extract<Outcome, { ok: false }>;

/** Where a write of the group stands after a round trip. */
type Standing = { state: 'pending' } | { state: 'done'; outcome: Outcome } | { state: 'alone' };

/** The group's BEGIN and its bound on lock waits, in one simple query. */
const BEGIN = `BEGIN; SET LOCAL lock_timeout = '${GROUP_LOCK_TIMEOUT}'`;

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
    const { standings, broken } = await this.commitTogether(link.pooled, group);
    await link.done(broken);
    const again: Write[] = [];
    group.forEach((write, i) => {
      const standing = standings[i];
      if (standing.state === 'done') write.answer(standing.outcome);
      else again.push(write);
    });
    // Each write that stepped out (it failed, or waited for a lock past the bound) runs alone, as
    // it would have without the group; they do not wait for one another.
    await Promise.all(again.map((write) => this.runAlone(write)));
  }

  /** Runs a write as its own transaction, committed at its Sync: no BEGIN, no COMMIT. */
  private async runAlone(write: Write): Promise<void> {
    let link: Link;
    try {
      link = await this.host.connect();
    } catch (err) {
      write.answer(this.host.failed(err));
      return;
    }
    const { text, name } = write.prepared;
    const outcome = await this.host.sent(link.pooled.send(text, name, write.values, false), write.mode);
    await link.done(outcome.ok ? undefined : outcome.broken);
    write.answer(outcome);
  }

  /**
   * The group's transaction: its round trip, then one more after each statement that failed,
   * without it, until COMMIT answers or the group fails as such. Every write then stands done
   * (committed, or failed with the connection) or alone (to run again); `broken` says why the
   * connection cannot be used again.
   */
  private async commitTogether(
    connection: Connection,
    group: Write[],
  ): Promise<{ standings: Standing[]; broken: unknown }> {
    const standings: Standing[] = group.map(() => ({ state: 'pending' }));
    for (;;) {
      const pending = group.flatMap((write, i) => (standings[i].state === 'pending' ? [i] : []));
      const begun = this.host.sent(connection.control(BEGIN), 'run');
      const steps = pending.map((i) => {
        const { prepared, values, mode } = group[i];
        return { i, outcome: this.host.sent(connection.send(prepared.text, prepared.name, values, true), mode) };
      });
      const committed = this.host.sent(connection.control('COMMIT'), 'run');
      const opened = await begun;
      const outcomes = await Promise.all(steps.map((step) => step.outcome));
      const ended = await committed;
      const lost = [opened, ...outcomes, ended].find((o): o is Failure => !o.ok && o.broken !== undefined);
      if (lost) {
        // The connection was lost: nothing of the group committed (or, lost during the COMMIT,
        // nobody can say, as for a write alone), and every write fails with why.
        return { standings: group.map(() => ({ state: 'done', outcome: lost })), broken: lost.broken };
      }
      if (!opened.ok) {
        // BEGIN refused by a server that serves on (never seen): a statement that succeeded ran on
        // its own, outside any transaction, and stands; the others run again alone, and the
        // connection is not trusted again.
        steps.forEach((step, k) => {
          standings[step.i] = outcomes[k].ok ? { state: 'done', outcome: outcomes[k] } : { state: 'alone' };
        });
        const standing = (s: Standing): Standing => (s.state === 'pending' ? { state: 'alone' } : s);
        return { standings: standings.map(standing), broken: opened.failure };
      }
      const failed = outcomes.findIndex((o) => !o.ok && !(o.failure instanceof SkippedStatement));
      if (ended.ok && ended.command === 'COMMIT' && failed < 0) {
        steps.forEach((step, k) => (standings[step.i] = { state: 'done', outcome: outcomes[k] }));
        return { standings, broken: undefined };
      }
      if (failed < 0) {
        // The group failed as such (its COMMIT refused, a deferred constraint): it was rolled
        // back, and each write runs again alone.
        return { standings: group.map(() => ({ state: 'alone' })), broken: undefined };
      }
      // A statement failed, and the group's transaction with it: the rest goes again without it.
      standings[steps[failed].i] = { state: 'alone' };
    }
  }
}
