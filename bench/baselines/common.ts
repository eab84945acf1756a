// What every hand-written baseline needs besides its HTTP layer and data access: where to listen,
// which database to open, the API key check, and the simple checks a hand-written handler does on
// its input. Shared so that the baselines differ only in the layer each one stands for.

import { createHash, timingSafeEqual } from 'node:crypto';

const PRIORITIES = ['low', 'normal', 'high'];

export interface TicketInput {
  title?: string;
  body?: string | null;
  priority?: string;
}

export interface ListParams {
  limit: number;
  offset: number;
}

export function serverConfig(): {
  port: number;
  databaseUrl: string;
  authorized: (header: string | undefined) => boolean;
} {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL must be set');
  const key = process.env.API_KEY;
  if (!key) throw new Error('API_KEY must be set');
  return { port: Number(process.env.PORT ?? 3000), databaseUrl, authorized: bearerCheck(key) };
}

/** The file of a SQLite `file:` URL. */
export function sqliteFile(databaseUrl: string): string {
  if (!databaseUrl.startsWith('file:')) throw new Error('DATABASE_URL must be a file: URL');
  return databaseUrl.slice('file:'.length);
}

export const isPostgresUrl = (databaseUrl: string) => /^postgres(ql)?:\/\//.test(databaseUrl);

/**
 * The actor a baseline's StartTicket assigns the ticket to: a baseline knows one API key only,
 * so one agent. (The generated app assigns it to the key's own agent id.)
 */
export const AGENT_ID = 'bench-agent';

const sha256 = (value: string) => createHash('sha256').update(value).digest();

/** `Authorization: Bearer <key>`, compared in constant time (digests, so the lengths match). */
function bearerCheck(key: string): (header: string | undefined) => boolean {
  const expected = sha256(`Bearer ${key}`);
  return (header) => header !== undefined && timingSafeEqual(sha256(header), expected);
}

/** Title a string (required on create), body a string or null, priority one of its values; nothing else. */
export function ticketInput(raw: unknown, creating: boolean): TicketInput | string {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'the body must be a JSON object';
  const { title, body, priority, ...rest } = raw as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length) return `unknown fields: ${unknown.join(', ')}`;
  if (title !== undefined && typeof title !== 'string') return 'title must be a string';
  if (creating && title === undefined) return 'title is required';
  if (body !== undefined && body !== null && typeof body !== 'string') return 'body must be a string';
  if (priority !== undefined && (typeof priority !== 'string' || !PRIORITIES.includes(priority))) {
    return `priority must be one of ${PRIORITIES.join(', ')}`;
  }
  return { title, body, priority } as TicketInput;
}

/** `limit` 1 to 1000 (default 100) and `offset` from 0 (default 0), as the generated app accepts. */
export function listParams(limit: unknown, offset: unknown): ListParams | undefined {
  const int = (raw: unknown, fallback: number): number => {
    if (raw === undefined) return fallback;
    return typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : -1;
  };
  const params = { limit: int(limit, 100), offset: int(offset, 0) };
  return params.limit >= 1 && params.limit <= 1000 && params.offset >= 0 ? params : undefined;
}

/** One row more than the page tells whether another page exists, as the generated app does. */
export function page<T>(
  rows: T[],
  params: ListParams,
): { items: T[]; limit: number; offset: number; hasMore: boolean } {
  const hasMore = rows.length > params.limit;
  if (hasMore) rows.pop();
  return { items: rows, limit: params.limit, offset: params.offset, hasMore };
}
