// The people table of the email provider: one row per person, e-mail unique (lower-cased),
// roles a JSON list. Shared by the provider and the users command. When people are the records of
// the blueprint's `User` entity (user-records.ts), the table keeps only their credentials: the
// record's id, the password hash and the roles the users command granted.

import { type Actor, makeActor } from '../../core/actor.ts';
import { emailKey, isEmail, storedDateTime } from '../../core/values.ts';
import { get, run, type Work } from '../../data/database.ts';

export const USERS_TABLE = '_bp_users';

/** Lower-cased, trimmed and NFC-normalized; undefined when it is not a plausible address. */
function normalizeEmail(raw: string): string | undefined {
  const email = emailKey(raw);
  return isEmail(email) ? email : undefined;
}

/**
 * An address as it was sent (NFC-normalized and trimmed, its letter case kept) and as
 * normalizeEmail gives it. A lookup that lets the database fold letter case needs the first: a
 * database may fold fewer letters than toLowerCase (SQLite's lower(), A to Z only).
 */
export interface EmailAddress {
  sent: string;
  normalized: string;
}

/** The address in both forms; undefined when it is not a plausible address. */
export function emailAddress(raw: string): EmailAddress | undefined {
  const normalized = normalizeEmail(raw);
  return normalized === undefined ? undefined : { sent: raw.normalize('NFC').trim(), normalized };
}

/** ISO 8601 with "+00:00", the form Prisma's SQLite adapter stores DateTime values in. */
export function isoNow(): string {
  return storedDateTime(new Date());
}

export function userActor(row: { id: string; email: string; roles: string }): Actor {
  const roles = parseRoles(row.roles);
  // `role` is the first role, as for API-key actors, so `actor.role` reads the same for both.
  const role = roles[0];
  return makeActor({
    kind: 'user',
    id: row.id,
    email: row.email,
    roles,
    ...(role === undefined ? {} : { role }),
    credentialId: sessionCredential(row.id),
    metadata: Object.freeze({ email: row.email, role }),
  });
}

/** The credential id of a person's sessions, in audit records and idempotency scopes. */
export function sessionCredential(id: string): string {
  return `session:${id}`;
}

/** The roles column is a JSON array of strings; anything else grants nothing. */
export function parseRoles(text: string): string[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((r): r is string => typeof r === 'string') : [];
  } catch {
    return [];
  }
}

export interface UserRow {
  id: string;
  email: string;
  passwordHash: string;
  roles: string;
}

const USER_COLUMNS = `"id", "email", "passwordHash", "roles"`;

export function* userById(id: string): Work<UserRow | undefined> {
  return (yield* get(`SELECT ${USER_COLUMNS} FROM "${USERS_TABLE}" WHERE "id" = ?`, [id])) as UserRow | undefined;
}

/** `email` as normalizeEmail gives it: the table holds addresses in that form. */
export function* userByEmail(email: string): Work<UserRow | undefined> {
  return (yield* get(`SELECT ${USER_COLUMNS} FROM "${USERS_TABLE}" WHERE "email" = ?`, [email])) as UserRow | undefined;
}

/** A person with no roles, as sign-up makes them. */
export function* insertUser(id: string, email: string, passwordHash: string): Work<void> {
  yield* run(`INSERT INTO "${USERS_TABLE}" (${USER_COLUMNS}, "createdAt") VALUES (?, ?, ?, '[]', ?)`, [
    id,
    email,
    passwordHash,
    isoNow(),
  ]);
}
