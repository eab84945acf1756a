// The messages of one pooled PostgreSQL connection while a unit of work runs on it. `pg` makes
// the connection (TLS, authentication, start-up settings) and pools it; while a unit holds it, the
// runtime writes the extended-protocol messages itself and reads the answers with `pg`'s own
// message parser, and between units every message goes to `pg` as before (data/postgres.ts).
//
// Why not `pg`'s queries: `pg` asks the server to describe every execution of a prepared
// statement, ends each statement with its own Sync and builds a query and a result object for
// each. Here a statement is described once per connection, when it is prepared, and its columns'
// names and parsers are kept; later executions send Bind and Execute only. The statements of one
// round trip leave in one write, and in a transaction they share one Sync: the server answers the
// whole trip at once, not statement by statement. An update costs the app about a quarter less
// CPU this way, and PostgreSQL about a tenth less (bench/README.md, "Runs on PostgreSQL").

import type { Socket } from 'node:net';
import type pg from 'pg';
import { serialize } from 'pg-protocol';
import type {
  BackendMessage,
  CommandCompleteMessage,
  DataRowMessage,
  DatabaseError,
  RowDescriptionMessage,
} from 'pg-protocol/dist/messages.js';
import { Parser } from 'pg-protocol/dist/parser.js';
import type { Row } from './database.ts';

/** A statement's answer: its rows, the command tag's verb (`UPDATE`, `COMMIT`) and its row count. */
export interface Result {
  rows: Row[];
  command: string;
  rowCount: number;
}

/** What a prepared statement's description says: its columns' names and their parsers. */
interface Shape {
  names: string[];
  parsers: Array<(text: string) => unknown>;
  /**
   * False until the server has parsed the statement under its name: a Parse it refused, or
   * skipped after a failure before it, is sent again the next time.
   */
  prepared: boolean;
}

/** The parser of a column's text by its type's OID. */
export type ParserOf = (oid: number) => (text: string) => unknown;

/** An answer the connection owes: a statement's, or a Sync's (ReadyForQuery). */
interface Pending {
  shape: Shape | undefined;
  /** The name this statement's Parse prepares, when it sends one: forgotten if the Parse fails. */
  name: string | undefined;
  rows: Row[];
  /**
   * True when the statement has its own Sync (outside a transaction): it is answered at the Sync,
   * when it has committed, with what it got meanwhile.
   */
  ownSync: boolean;
  got: { ok: true; result: Result } | { ok: false; error: unknown } | undefined;
  /** True for the Sync a trip ends with in a transaction, which answers nobody. */
  sync: boolean;
  resolve: (result: Result) => void;
  reject: (err: unknown) => void;
}

const SYNC = serialize.sync();
const EXECUTE = serialize.execute({});

/** The failure of a statement the server skipped because one before it in its trip failed. */
export class SkippedStatement extends Error {
  constructor() {
    super('not run: a statement before it in the same round trip failed');
  }
}

/** The failure of every unanswered statement when the connection is lost. */
const LOST = 'Connection terminated unexpectedly';

/** Connections taken over, by `pg` client: each keeps its prepared statements' shapes. */
const wires = new WeakMap<pg.PoolClient, Wire>();

export class Wire {
  private readonly shapes = new Map<string, Shape>();
  private readonly parser = new Parser();
  private readonly stream: Socket;
  private readonly queue: Pending[] = [];
  private head = 0;
  private out: Buffer[] = [];
  /** Statements queued since the last Sync: the next flush in a transaction adds one. */
  private unsynced = false;
  /** Set while a unit of work drives the connection; otherwise messages go to `pg`. */
  private driving = false;
  private whenIdle: (() => void) | undefined;
  /** Why the connection cannot be trusted any more, once it cannot. */
  broken: unknown;

  /** The wire of `client`'s connection, taking its messages over from `pg` the first time. */
  static of(client: pg.PoolClient, parserOf: ParserOf): Wire {
    let wire = wires.get(client);
    if (!wire) {
      wire = new Wire((client as unknown as { connection: Connection }).connection, parserOf);
      wires.set(client, wire);
    }
    return wire;
  }

  private constructor(
    connection: Connection,
    private readonly parserOf: ParserOf,
  ) {
    const stream = connection.stream;
    this.stream = stream;
    // `pg` reads the socket with one 'data' listener (its parser); this one replaces it, and
    // hands `pg` every message while no unit drives the connection, as `pg`'s own would.
    const readers = stream.listeners('data');
    if (readers.length !== 1)
      throw new Error(`cannot take over a PostgreSQL connection with ${readers.length} readers`);
    stream.removeListener('data', readers[0] as (buffer: Buffer) => void);
    const onMessage = (message: BackendMessage): void => {
      if (this.driving) return this.receive(message);
      if (connection._emitMessage) connection.emit('message', message);
      connection.emit(message.name === 'error' ? 'errorMessage' : message.name, message);
    };
    stream.on('data', (buffer: Buffer) => this.parser.parse(buffer, onMessage));
    stream.on('close', () => this.lose(new Error(LOST)));
    stream.on('error', (err: Error) => this.lose(err));
  }

  /** Starts a unit of work on the connection: its messages come here until `release`. */
  begin(): void {
    this.driving = true;
  }

  /** Ends the unit, once every answer owed has come (`settled`): messages go to `pg` again. */
  release(): void {
    this.driving = false;
  }

  /**
   * Queues a statement: Parse and Describe the first time `name` is used on this connection (or
   * every time, unnamed), then Bind and Execute; with its own Sync when `ownSync`. Nothing is
   * written until `flush`. Resolves with its answer, or rejects with the server's error. The
   * values are `wireValues`' (which refuses a bad parameter before anything is queued).
   */
  send(text: string, name: string | undefined, values: WireValue[], ownSync: boolean): Promise<Result> {
    return this.queueStatement(text, name, values, ownSync, true);
  }

  /**
   * Queues a transaction's BEGIN, COMMIT or ROLLBACK: prepared under its own name the first time,
   * never described (it has no rows; a ROLLBACK may run in a failed transaction, where a
   * description could be refused).
   */
  control(verb: 'BEGIN' | 'COMMIT' | 'ROLLBACK', ownSync: boolean): Promise<Result> {
    return this.queueStatement(verb, `bp_${verb.toLowerCase()}`, [], ownSync, false);
  }

  /**
   * Rolls back the transaction open on the connection (a failed one too), in a trip of its own;
   * resolves with the ROLLBACK's own failure, if it failed.
   */
  async rollBack(): Promise<unknown> {
    const answer = this.control('ROLLBACK', true);
    this.flush(false);
    try {
      await answer;
      return undefined;
    } catch (err) {
      return err;
    }
  }

  /**
   * Queues the messages of a statement, with Parse (and Describe, if `describe`) when `name` is
   * not yet prepared on this connection, or when it has no name.
   */
  private queueStatement(
    text: string,
    name: string | undefined,
    values: WireValue[],
    ownSync: boolean,
    describe: boolean,
  ): Promise<Result> {
    let shape = name === undefined ? undefined : this.shapes.get(name);
    let prepare: string | undefined;
    if (!shape) {
      shape = { names: [], parsers: [], prepared: false };
      prepare = name ?? '';
      if (name !== undefined) this.shapes.set(name, shape);
    }
    const out = this.out;
    if (prepare !== undefined) {
      out.push(serialize.parse({ name: prepare, text, types: [] }));
      if (describe) out.push(serialize.describe({ type: 'S', name: prepare }));
    }
    out.push(serialize.bind({ statement: name ?? '', values }), EXECUTE);
    if (ownSync) out.push(SYNC);
    else this.unsynced = true;
    return new Promise<Result>((resolve, reject) => {
      const named = prepare === undefined || prepare === '' ? undefined : prepare;
      this.queue.push({ shape, name: named, rows: [], ownSync, got: undefined, sync: false, resolve, reject });
    });
  }

  /**
   * Writes what was queued, in one write. In a transaction (`syncTrip`) the statements queued
   * since the last Sync get one now, so the server answers them all at once; outside one each
   * statement has its own, and commits on its own.
   */
  flush(syncTrip: boolean): void {
    if (syncTrip && this.unsynced) {
      this.out.push(SYNC);
      this.queue.push(TRIP_SYNC);
      this.unsynced = false;
    }
    if (this.out.length === 0) return;
    const data = this.out.length === 1 ? this.out[0] : Buffer.concat(this.out);
    this.out = [];
    if (this.broken === undefined) this.stream.write(data);
    else this.lose(this.broken);
  }

  /** Resolves once every answer owed has come, or the connection is lost. */
  settled(): Promise<void> {
    if (this.head === this.queue.length) return Promise.resolve();
    return new Promise<void>((resolve) => (this.whenIdle = resolve));
  }

  private receive(message: BackendMessage): void {
    const pending = this.queue[this.head] as Pending | undefined;
    switch (message.name) {
      case 'dataRow':
        if (pending?.shape) pending.rows.push(rowOf(pending.shape, (message as DataRowMessage).fields));
        return;
      case 'rowDescription':
        if (pending?.shape) this.describe(pending.shape, message as RowDescriptionMessage);
        return;
      case 'parseComplete':
        if (pending?.name !== undefined && pending.shape) pending.shape.prepared = true;
        return;
      case 'commandComplete':
      case 'emptyQuery':
        if (pending && !pending.sync) this.complete(pending, message);
        return;
      case 'readyForQuery':
        this.ready();
        return;
      case 'error':
        this.fail(pending, message as DatabaseError);
        return;
      case 'noData':
      case 'bindComplete':
      case 'parameterDescription':
      case 'notice':
      case 'parameterStatus':
      case 'notification':
        return;
      default:
        // A message the runtime never asks for (COPY, a suspended portal): the connection is out
        // of step with its statements and cannot be used again.
        this.lose(new Error(`unexpected PostgreSQL message ${message.name}`));
        this.stream.destroy();
    }
  }

  private describe(shape: Shape, message: RowDescriptionMessage): void {
    shape.names = message.fields.map((field) => field.name);
    shape.parsers = message.fields.map((field) => this.parserOf(field.dataTypeID));
  }

  private complete(pending: Pending, message: BackendMessage): void {
    const tag = message.name === 'commandComplete' ? (message as CommandCompleteMessage).text : '';
    const result = { rows: pending.rows, ...commandOf(tag) };
    if (pending.ownSync) {
      pending.got = { ok: true, result };
      return;
    }
    this.head++;
    pending.resolve(result);
  }

  /**
   * The server's error: it fails the statement it answers (a statement with its own Sync at the
   * Sync: the error may come after its rows, when its commit fails), and forgets a name whose
   * Parse it may have refused. The server skips what follows until the Sync.
   */
  private fail(pending: Pending | undefined, err: DatabaseError): void {
    if (!pending || pending.sync) {
      // Not a statement's error: one sent unasked (the server is ending the connection), or the
      // Sync's in a transaction. The connection is not used again.
      this.broken ??= err;
      return;
    }
    forgetUnprepared(pending, this.shapes);
    if (pending.ownSync) {
      pending.got = { ok: false, error: err };
      return;
    }
    this.head++;
    pending.reject(err);
  }

  /**
   * A Sync's answer. It ends a trip of a transaction (whose statements the server skipped after a
   * failure are unanswered, and fail), or answers the one statement it was sent with.
   */
  private ready(): void {
    while (this.head < this.queue.length) {
      const pending = this.queue[this.head++];
      if (pending.sync) break;
      const got = pending.got ?? { ok: false, error: new SkippedStatement() };
      forgetUnprepared(pending, this.shapes);
      if (got.ok) pending.resolve(got.result);
      else pending.reject(got.error);
      if (pending.ownSync) break;
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
      this.whenIdle?.();
      this.whenIdle = undefined;
    }
  }

  /** The connection is gone: every answer owed fails with why. */
  private lose(err: unknown): void {
    this.broken ??= err;
    const owed = this.queue.splice(this.head);
    this.queue.length = 0;
    this.head = 0;
    this.unsynced = false;
    for (const pending of owed) pending.reject(this.broken);
    this.whenIdle?.();
    this.whenIdle = undefined;
  }
}

/** The part of `pg`'s connection the wire uses: its socket (TLS or not), and its events. */
interface Connection {
  stream: Socket;
  /** Set by `pg` once something listens to every message ('message'). */
  _emitMessage: boolean;
  emit(event: string, message: unknown): boolean;
}

function ignore(): void {}

/** The Sync that ends a trip of a transaction: answered by nobody, so never changed, and shared. */
const TRIP_SYNC: Pending = {
  shape: undefined,
  name: undefined,
  rows: [],
  ownSync: false,
  got: undefined,
  sync: true,
  resolve: ignore,
  reject: ignore,
};

/** A name whose Parse the server refused or skipped is prepared again the next time it is used. */
function forgetUnprepared(pending: Pending, shapes: Map<string, Shape>): void {
  if (pending.name === undefined || !pending.shape || pending.shape.prepared) return;
  if (shapes.get(pending.name) === pending.shape) shapes.delete(pending.name);
}

/** A row of the statement's columns, each parsed from its text by its type. */
function rowOf(shape: Shape, fields: Array<string | null>): Row {
  const row: Row = {};
  const { names, parsers } = shape;
  for (let i = 0; i < names.length; i++) {
    const text = fields[i];
    row[names[i]] = text === null ? null : parsers[i](text);
  }
  return row;
}

/** The verb and row count of a command tag: `UPDATE 1`, `INSERT 0 1`, `SELECT 3`, `COMMIT`. */
function commandOf(tag: string): { command: string; rowCount: number } {
  const space = tag.indexOf(' ');
  if (space < 0) return { command: tag, rowCount: 0 };
  return { command: tag.slice(0, space), rowCount: Number(tag.slice(tag.lastIndexOf(' ') + 1)) || 0 };
}

/** A parameter as the protocol sends it: text, or bytes for a Buffer (bound in binary), or null. */
export type WireValue = string | Buffer | null;

/**
 * A statement's parameters as the protocol sends them. The runtime binds the stored form only
 * (strings, numbers, Buffers, null): anything else is its bug, refused with a TypeError rather
 * than guessed at.
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
