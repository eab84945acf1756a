// The statements of the PostgreSQL driver (data/postgres.ts) as it sends them: each text in
// PostgreSQL's form, named once so that `pg` prepares it once per connection, and what the driver
// reads from a text itself (the table a plain INSERT writes, and whether a write's INSERTs can go
// as one statement).

import { createHash } from 'node:crypto';
import { type Statement, sqlText } from './database.ts';

/**
 * Statement texts kept converted (and named), by text. The texts the generator wrote are a few
 * per entity; row filters add one per distinct rule shape. Beyond the bound (a shape that varies
 * per request), texts are converted at each use and run unnamed, so neither this map nor the
 * statements prepared on each connection grow without end.
 */
const MAX_PREPARED = 1024;

export interface Prepared {
  text: string;
  /** The name the statement is prepared under on each connection, when it has one. */
  name: string | undefined;
  /** For a plain INSERT, the table it writes (`tableOf`). */
  table: string | undefined;
}

/** The statements of one pool, each worked out once per text. */
export class Statements {
  private readonly prepared = new Map<string, Prepared>();
  /** The text each statement name stands for: a hash collision must never run the wrong statement. */
  private readonly named = new Map<string, string>();

  /** A statement's text in PostgreSQL's form and its name. */
  of(sql: string): Prepared {
    let prepared = this.prepared.get(sql);
    if (prepared) return prepared;
    const text = sqlText('postgres', sql);
    const table = tableOf(sql);
    if (this.prepared.size >= MAX_PREPARED) return { text, name: undefined, table };
    let name: string | undefined = `bp_${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
    if (this.named.has(name)) name = undefined;
    else this.named.set(name, text);
    prepared = { text, name, table };
    this.prepared.set(sql, prepared);
    return prepared;
  }
}

/** `INSERT INTO "Table" (columns) VALUES (values)`, and nothing after: the table, quoted. */
const PLAIN_INSERT = /^INSERT INTO ("(?:[^"]|"")+") \([^()]*\) VALUES \(([^()]|\([^()]*\))*\)$/;

/** The table a plain INSERT writes, unquoted as the server's errors name it; undefined for any other statement. */
function tableOf(sql: string): string | undefined {
  const quoted = PLAIN_INSERT.exec(sql)?.[1];
  return quoted === undefined ? undefined : quoted.slice(1, -1).replaceAll('""', '"');
}

/** A `later` statement a write holds, worked out, its parameters in the form sent. */
export interface Held {
  statement: Statement;
  prepared: Prepared;
  values: WireValue[];
}

/**
 * The one statement that does what the held statements do in a transaction, or undefined. A
 * statement alone is itself. Plain INSERTs into different tables become one statement whose
 * data-modifying WITH clauses run them all on one snapshot: none reads what another writes, and a
 * foreign key between them is checked at the statement's end, when all rows are in. PostgreSQL
 * runs the main statement first and then the WITH clauses from the last to the first, so the first
 * held statement is the main one and the others follow in reverse: they run in the unit's order,
 * and of several failures the first is the one reported, as in a transaction (tested). Anything
 * else (an UPDATE, a DELETE, two rows of one table) stays a transaction of its own statements.
 */
export function oneStatement(held: readonly Held[]): { sql: string; values: WireValue[] } | undefined {
  if (held.length === 1) return { sql: held[0].statement.sql, values: held[0].values };
  const tables = new Set(held.map((h) => h.prepared.table));
  if (tables.has(undefined) || tables.size !== held.length) return undefined;
  // The WITH clauses hold the others from the last to the second (others[i] is held[n - 1 - i]);
  // the values go in the order of the text, whose placeholders they fill.
  const others = held.slice(1).reverse();
  const clauses = others.map((h, i) => `bp_${held.length - i} AS (${h.statement.sql})`);
  return {
    sql: `WITH ${clauses.join(', ')} ${held[0].statement.sql}`,
    values: [...others, held[0]].flatMap((h) => h.values),
  };
}

/** A parameter as it is sent: text, or bytes for a Buffer (`pg` binds those in binary), or null. */
export type WireValue = string | Buffer | null;

/**
 * A statement's parameters as they are sent. The runtime binds the stored form only (strings,
 * numbers, Buffers, null): anything else is its bug, refused with a TypeError before anything is
 * sent, rather than guessed at (`pg` would turn an object into JSON, a Date into local time).
 */
export function wireValues(params: readonly unknown[]): WireValue[] {
  return params.map(wireValue);
}

function wireValue(value: unknown): WireValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  throw new TypeError(`a statement parameter must be a string, number, Buffer or null (got ${typeof value})`);
}
