// One pooled PostgreSQL connection while a unit of work (data/postgres.ts) or a group of writes
// (data/postgres-group.ts) holds it: the statements sent on it and their answers, through `pg`'s
// public API only. The pool's clients run in `pg`'s pipeline mode (`pipeline: true`,
// https://node-postgres.com/features/pipelining): a query goes out as soon as it is issued,
// without waiting for the answers of those before it, and the server answers each in order. So
// the statements a unit issues before it waits for one leave together and share a round trip, and
// a group's BEGIN, statements and COMMIT take one. A named statement is parsed once per
// connection (`pg` keeps which names it has prepared).
//
// Each query ends with its own Sync: a statement outside a transaction block commits on its own,
// and inside one the server still runs every statement it is sent. After a statement of a block
// fails, the server refuses everything that follows until the block ends or rolls back to a
// savepoint, each with an error of its own (25P02, "current transaction is aborted"; or, for a
// statement whose Parse was refused so, "prepared statement does not exist"): such a statement was
// not run, and it is answered as `SkippedStatement`, not with that error.

import type pg from 'pg';
import type { Row } from './database.ts';
import { statementError } from './postgres-errors.ts';
import type { WireValue } from './postgres-statements.ts';

/** A statement's answer: its rows, the command tag's verb (`UPDATE`, `COMMIT`) and its row count. */
export interface Result {
  rows: Row[];
  command: string;
  rowCount: number;
}

/**
 * A statement's answer as the driver hands it on: its result (and PostgreSQL's command tag), or
 * its failure, mapped to the app's errors, with what broke the connection, if it broke (and the
 * table the server's error names, if any).
 */
export type Outcome =
  { ok: true; value: unknown; command: string } | { ok: false; failure: unknown; broken: unknown; table?: string };

/** The failure of a statement the server did not run because one before it in its transaction failed. */
export class SkippedStatement extends Error {
  constructor() {
    super('not run: a statement before it in the same transaction failed');
  }
}

export class Connection {
  /** Statements sent and not yet answered. */
  private owed = 0;
  private whenSettled: (() => void) | undefined;
  /** Set once a statement of the open transaction block failed, until a statement succeeds (it ended the block). */
  private aborted = false;
  /** Why the connection cannot be trusted any more, once it cannot. */
  broken: unknown;

  constructor(readonly client: pg.PoolClient) {}

  /**
   * Sends a statement, prepared under `name` the first time it is used on this connection (or
   * unnamed); `block` says whether it runs inside a transaction block. Resolves with its answer,
   * or rejects with the server's error, `SkippedStatement`, or why the connection failed. The
   * values are `wireValues`' (which refuses a bad parameter before anything is sent).
   */
  send(text: string, name: string | undefined, values: WireValue[], block: boolean): Promise<Result> {
    return this.issue(name === undefined ? { text, values } : { text, name, values }, block);
  }

  /**
   * Sends a statement without parameters as a simple query: BEGIN, COMMIT, ROLLBACK, or several
   * statements in one text. It runs in (or begins or ends) a transaction block.
   */
  control(text: string): Promise<Result> {
    return this.issue({ text }, true);
  }

  /**
   * Rolls back the transaction open on the connection (a failed one too); resolves with the
   * ROLLBACK's own failure, if it failed.
   */
  async rollBack(): Promise<unknown> {
    try {
      await this.control('ROLLBACK');
      return undefined;
    } catch (err) {
      return err;
    }
  }

  /** Resolves once every statement sent has been answered, or has failed with the connection. */
  settled(): Promise<void> {
    if (this.owed === 0) return Promise.resolve();
    return new Promise<void>((resolve) => (this.whenSettled = resolve));
  }

  private issue(config: pg.QueryConfig, block: boolean): Promise<Result> {
    this.owed++;
    return new Promise<Result>((resolve, reject) => {
      // `pg` calls back in the order the server answers, which is the order sent: `aborted` is
      // set by the first failure of a block before the statements after it are answered.
      this.client.query(config, (err: Error | null | undefined, result: pg.QueryResult | pg.QueryResult[]) => {
        if (--this.owed === 0) {
          this.whenSettled?.();
          this.whenSettled = undefined;
        }
        if (!err) {
          this.aborted = false;
          resolve(resultOf(result));
          return;
        }
        if (!statementError(err)) this.broken ??= err;
        else if (block && this.aborted) err = new SkippedStatement();
        else if (block) this.aborted = true;
        reject(err);
      });
    });
  }
}

/** The answer of a query (the last statement's, for a simple query of several). */
function resultOf(result: pg.QueryResult | pg.QueryResult[]): Result {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return { rows: last.rows as Row[], command: last.command, rowCount: last.rowCount ?? 0 };
}
