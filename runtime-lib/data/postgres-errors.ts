// PostgreSQL's failures, mapped to the errors every driver throws (data/database.ts), and what a
// failure says about the connection it happened on.

import pg from 'pg';
import { databaseBusy, referenceConflict, storageUnavailable, uniqueConflict } from './database.ts';
import { fieldOfColumn } from './fields.ts';

/** SQLSTATEs of waiting on other transactions: the same request can succeed a moment later. */
const BUSY = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57014', // query_canceled: the statement timeout
]);

/** SQLSTATEs of a server that cannot serve now: out of connections, shutting down, out of disk or memory. */
const UNAVAILABLE = new Set([
  '53300', // too_many_connections
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, or in recovery)
  '53100', // disk_full
  '53200', // out_of_memory
]);

/** Codes of Node's network errors reaching the server. */
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/** Messages of `pg` and `pg-pool` for a connection they could not make or lost (they carry no code). */
const CONNECTION_LOST = new Set([
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * Turns PostgreSQL's constraint, lock and availability errors into errors a client can act on;
 * anything else (a NOT NULL or CHECK violation, a bad value or statement: the runtime validates
 * first, so these are its bugs) stays as it is and becomes an INTERNAL_ERROR.
 */
export function mapPostgresError(err: unknown): unknown {
  if (err instanceof pg.DatabaseError) {
    const code = err.code ?? '';
    if (code === '23505') return uniqueConflict(uniqueFields(err));
    // 23001: a RESTRICT foreign key (Prisma's default for a required relation), since PostgreSQL 18.
    if (code === '23503' || code === '23001') return referenceConflict();
    if (BUSY.has(code)) return databaseBusy(err);
    if (UNAVAILABLE.has(code) || code.startsWith('08')) return storageUnavailable(err);
    return err;
  }
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK.has(code)) return storageUnavailable(err);
  return CONNECTION_LOST.has(err.message) ? storageUnavailable(err) : err;
}

/** Whether a failure is the server's own error about a statement, after which the connection serves on. */
export function statementError(err: unknown): err is pg.DatabaseError {
  return err instanceof pg.DatabaseError && err.severity !== 'FATAL' && err.severity !== 'PANIC';
}

/** What a caller is rejected with: the app's error for PostgreSQL failures, an Error for anything thrown. */
export function asError(err: unknown): unknown {
  if (err instanceof Error) return mapPostgresError(err);
  const what = err === null ? 'null' : typeof err;
  return new Error(`a unit of work threw ${what}, not an Error`, { cause: err });
}

/** An identifier as PostgreSQL prints it in a key: bare (lower case), or double-quoted with `""` for `"`. */
const IDENTIFIER = String.raw`(?:"(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)`;
const KEY_COLUMNS = new RegExp(String.raw`^Key \((${IDENTIFIER}(?:, ${IDENTIFIER})*)\)=`);
const KEY_LOWER = new RegExp(String.raw`^Key \(lower\((${IDENTIFIER})\)\)=`);

function unquote(identifier: string): string {
  return identifier.startsWith('"') ? identifier.slice(1, -1).replaceAll('""', '"') : identifier;
}

/**
 * The fields a unique violation names. The detail reads `Key ("a", b)=(...) already exists.`
 * for an index on columns (a composite one for an entity's `indexes`), or
 * `Key (lower(email))=(...)` for the index on lower() of a unique e-mail field (addresses are
 * unique in any letter case), named `<Table>_<column>_lower_key`: the name is the fallback when
 * the detail is withheld. A unique e-mail field's key column (`_bp_key_<field>`) names its field.
 */
function uniqueFields(err: pg.DatabaseError): string[] | undefined {
  const detail = err.detail ?? '';
  const columns = KEY_COLUMNS.exec(detail)?.[1];
  if (columns) return [...columns.matchAll(new RegExp(IDENTIFIER, 'g'))].map((m) => fieldOfColumn(unquote(m[0])));
  const lower = KEY_LOWER.exec(detail)?.[1];
  if (lower) return [unquote(lower)];
  const { table, constraint } = err;
  if (table && constraint?.startsWith(`${table}_`) && constraint.endsWith('_lower_key'))
    return [constraint.slice(table.length + 1, -'_lower_key'.length)];
  // Prisma names a unique index `<Table>_<column>_key`: a key column's names its field.
  if (table && constraint?.startsWith(`${table}__bp_key_`) && constraint.endsWith('_key'))
    return [fieldOfColumn(constraint.slice(table.length + 1, -'_key'.length))];
  return undefined;
}
