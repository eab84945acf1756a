// `npm run users -- <command>`: manage the people who sign in with e-mail and password from the
// command line, which is also how the first administrator gets a role (sign-up grants none) and,
// with auth.signup = false, the only way anyone gets an account.
// Exit codes: 0 done, 1 bad input (unknown user, weak password, ...), 2 bad usage.

import { parseArgs } from 'node:util';
import { isoNow, normalizeEmail, parseRoles, USERS_TABLE } from './users.ts';
import type { Db } from '../../data/db.ts';
import { ulid } from '../../core/ids.ts';
import { hashPasswordSync, passwordProblem } from './password.ts';
import { SESSIONS_TABLE } from './session-store.ts';

const PIPE_EXAMPLE = `printf '%s\\n' "$PASSWORD" | npm run users -- add --email E`;

export const USERS_USAGE = `usage: npm run users -- <command> [options]

commands:
  add --email E [--role R ...]         create a user (repeat --role for several roles)
  list                                 list users: e-mail, roles, creation time
  set-roles --email E [--role R ...]   replace a user's roles (no --role removes them all)
  remove --email E                     delete a user and end their sessions

add asks for the password twice at a terminal, without showing it, or reads it from stdin
(one line) when piped: ${PIPE_EXAMPLE}`;

/**
 * Why the password is never an argument: what to say to `--password`. Every user of the machine
 * can read a process's arguments (ps, /proc), and the shell keeps them in its history.
 */
export const PASSWORD_ARGUMENT_REFUSED =
  '--password is not accepted: a password in the arguments is visible to other users (ps) and stays ' +
  `in the shell history. Type it when asked, or pipe it on stdin: ${PIPE_EXAMPLE}`;

const COMMANDS: Record<string, { required: string[]; allowed: string[] }> = {
  add: { required: ['email'], allowed: ['email', 'role'] },
  list: { required: [], allowed: [] },
  'set-roles': { required: ['email'], allowed: ['email', 'role'] },
  remove: { required: ['email'], allowed: ['email'] },
};

export interface UsersCliIo {
  out(line: string): void;
  /** Errors and usage; `out` when not given. */
  err?(line: string): void;
  /** The new password of `add`: typed at a terminal or piped (see password-input.ts). */
  readPassword(): Promise<string>;
}

const ROLE = /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/;

class InputError extends Error {}
class UsageError extends Error {}

export async function runUsersCli(db: Db, argv: string[], io: UsersCliIo): Promise<number> {
  const { out } = io;
  const errOut = io.err ?? out;
  try {
    const { command, values } = parse(argv);
    if (command === 'help') {
      out(USERS_USAGE);
      return 0;
    }
    if (command === 'list') list(db, out);
    else if (command === 'add') await add(db, values, io);
    else if (command === 'set-roles') setRoles(db, values, out);
    else remove(db, values, out);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      errOut(`error: ${err.message}`);
      errOut(USERS_USAGE);
      return 2;
    }
    errOut(`error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

type Values = { email?: string; role?: string[] };

function parse(argv: string[]): { command: string; values: Values } {
  if (argv.some((arg) => arg === '--password' || arg.startsWith('--password=')))
    throw new UsageError(PASSWORD_ARGUMENT_REFUSED);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        email: { type: 'string' },
        role: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals[0] === 'help') return { command: 'help', values: {} };
  if (positionals.length === 0) throw new UsageError('missing command');
  const [command, ...extra] = positionals;
  if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command "${command}"`);
  const spec = COMMANDS[command];
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
  for (const name of Object.keys(values)) {
    if (!spec.allowed.includes(name)) throw new UsageError(`${command} does not take --${name}`);
  }
  for (const name of spec.required) {
    if (values[name as keyof typeof values] === undefined) throw new UsageError(`${command} needs --${name}`);
  }
  return { command, values };
}

function email(values: Values): string {
  const normalized = normalizeEmail(values.email ?? '');
  if (!normalized) throw new InputError(`"${values.email}" is not a valid e-mail address`);
  return normalized;
}

function roles(values: Values): string[] {
  const list = values.role ?? [];
  const bad = list.find((r) => !ROLE.test(r));
  if (bad !== undefined)
    throw new InputError(`"${bad}" is not a valid role name (a letter, then letters, digits, _ . : or -)`);
  return [...new Set(list)];
}

async function add(db: Db, values: Values, io: UsersCliIo): Promise<void> {
  const address = email(values);
  const granted = roles(values);
  const taken = () =>
    new InputError(`a user with the e-mail ${address} already exists (use set-roles to change their roles)`);
  // Checked before the password is asked for, so nobody types one for nothing.
  if (db.prepare(`SELECT 1 FROM "${USERS_TABLE}" WHERE "email" = ?`).get(address)) throw taken();
  const password = await io.readPassword();
  const problem = passwordProblem(password);
  if (problem) throw new InputError(problem);
  try {
    db.prepare(
      `INSERT INTO "${USERS_TABLE}" ("id", "email", "passwordHash", "roles", "createdAt") VALUES (?, ?, ?, ?, ?)`,
    ).run(ulid(), address, hashPasswordSync(password), JSON.stringify(granted), isoNow());
  } catch (err) {
    // Someone added the same e-mail while the password was being typed.
    if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw taken();
    throw err;
  }
  io.out(`added ${address} (${describeRoles(granted)})`);
}

function list(db: Db, out: (line: string) => void): void {
  // The hash column is never read, so it cannot be printed by mistake.
  const rows = db.prepare(`SELECT "email", "roles", "createdAt" FROM "${USERS_TABLE}" ORDER BY "email"`).all() as {
    email: string;
    roles: string;
    createdAt: string;
  }[];
  if (rows.length === 0) {
    out('no users');
    return;
  }
  const table = [
    ['EMAIL', 'ROLES', 'CREATED'],
    ...rows.map((r) => [r.email, parseRoles(r.roles).join(',') || '-', r.createdAt]),
  ];
  const widths = [0, 1].map((i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) out(`${row[0].padEnd(widths[0])}  ${row[1].padEnd(widths[1])}  ${row[2]}`);
}

function setRoles(db: Db, values: Values, out: (line: string) => void): void {
  const address = email(values);
  const granted = roles(values);
  const result = db
    .prepare(`UPDATE "${USERS_TABLE}" SET "roles" = ? WHERE "email" = ?`)
    .run(JSON.stringify(granted), address);
  if (result.changes === 0) throw new InputError(`no user with the e-mail ${address}`);
  // Sessions read roles on every request, so the change applies at once.
  out(`${address} now has ${describeRoles(granted)}`);
}

function remove(db: Db, values: Values, out: (line: string) => void): void {
  const address = email(values);
  const user = db.prepare(`SELECT "id" FROM "${USERS_TABLE}" WHERE "email" = ?`).get(address) as
    { id: string } | undefined;
  if (!user) throw new InputError(`no user with the e-mail ${address}`);
  const ended = db.transaction(() => {
    db.prepare(`DELETE FROM "${USERS_TABLE}" WHERE "id" = ?`).run(user.id);
    // A damaged row must not make json_extract fail the whole removal.
    const sql = `DELETE FROM "${SESSIONS_TABLE}"
      WHERE CASE WHEN json_valid("data") THEN json_extract("data", '$.userId') END = ?`;
    return db.prepare(sql).run(user.id).changes;
  })();
  out(`removed ${address} (${ended} session${ended === 1 ? '' : 's'} ended)`);
}

function describeRoles(list: string[]): string {
  return list.length ? `roles: ${list.join(', ')}` : 'no roles';
}
