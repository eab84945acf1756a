// `npm run users -- <command>`: manage the people who sign in with e-mail and password from the
// command line, which is also how the first administrator gets a role (sign-up grants none) and,
// with auth.signup = false, the only way anyone gets an account. When people are the records of
// the blueprint's `User` entity, `add` and `update` create and change those records (`--field`),
// validated as any create or update, and written as the app's own trusted work (SYSTEM); --role
// then writes the record's `role` / `roles` fields, so the roles printed, listed and acted with are
// the record's. It prints ids, login e-mails and roles, never another field's value: the operator
// is trusted (the app's own work), and these are what managing people needs.
// Exit codes: 0 done, 1 bad input (unknown user, weak password, ...), 2 bad usage.

import { parseArgs } from 'node:util';
import { type EmailAddress, emailAddress, isoNow, parseRoles, USERS_TABLE } from './users.ts';
import { AppError } from '../../core/errors.ts';
import { all, type Database, get, run } from '../../data/database.ts';
import type { Row } from '../../data/fields.ts';
import { ulid } from '../../core/ids.ts';
import { valueFromText } from '../../data/field-text.ts';
import { hashPasswordSync, passwordProblem } from './password.ts';
import { SESSIONS_TABLE } from './session-store.ts';
import type { UserRecordsAdmin } from './user-records.ts';

const PIPE_EXAMPLE = `printf '%s\\n' "$PASSWORD" | npm run users -- add --email E`;

export const USERS_USAGE = `usage: npm run users -- <command> [options]

commands:
  add --email E [--role R ...]         create a user (repeat --role for several roles)
  list                                 list users: e-mail, roles, creation time
  set-roles --email E [--role R ...]   replace a user's roles (no --role removes them all)
  remove --email E                     delete a user and end their sessions

add asks for the password twice at a terminal, without showing it, or reads it from stdin
(one line) when piped: ${PIPE_EXAMPLE}`;

/** The usage when people are User records: fields of the record, and its id in the list. */
export const USER_RECORDS_USAGE = `usage: npm run users -- <command> [options]

commands:
  add --email E [--field name=value ...] [--role R ...]
                                       create a User record that signs in with E and a password
                                       (or give an existing record without one a password)
  update --email E --field name=value [--field ...]
                                       change fields of the User record
  list                                 list User records: id, e-mail, roles, password
  set-roles --email E [--role R ...]   replace a person's roles (no --role removes them); with a
                                       role or roles field, --role writes the record's field
  remove --email E                     remove a person's password and end their sessions (the
                                       User record stays)

--field values are read as the field's type: numbers, true or false, JSON.
add asks for the password twice at a terminal, without showing it, or reads it from stdin
(one line) when piped: ${PIPE_EXAMPLE}`;

/**
 * Why the password is never an argument: what to say to `--password`. Every user of the machine
 * can read a process's arguments (ps, /proc), and the shell keeps them in its history.
 */
export const PASSWORD_ARGUMENT_REFUSED =
  '--password is not accepted: a password in the arguments is visible to other users (ps) and stays ' +
  `in the shell history. Type it when asked, or pipe it on stdin: ${PIPE_EXAMPLE}`;

const COMMANDS: Record<string, { required: string[]; allowed: string[]; records?: true }> = {
  add: { required: ['email'], allowed: ['email', 'role', 'field'] },
  update: { required: ['email', 'field'], allowed: ['email', 'field'], records: true },
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

/** `records`: given when people are the records of the blueprint's `User` entity. */
export async function runUsersCli(
  db: Database,
  argv: string[],
  io: UsersCliIo,
  records?: UserRecordsAdmin,
): Promise<number> {
  const { out } = io;
  const errOut = io.err ?? out;
  const usage = records ? USER_RECORDS_USAGE : USERS_USAGE;
  try {
    const { command, values } = parse(argv, records !== undefined);
    if (command === 'help') {
      out(usage);
      return 0;
    }
    if (records) await recordsCommand(records, command, values, io);
    else if (command === 'list') await list(db, out);
    else if (command === 'add') await add(db, values, io);
    else if (command === 'set-roles') await setRoles(db, values, out);
    else await remove(db, values, out);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      errOut(`error: ${err.message}`);
      errOut(usage);
      return 2;
    }
    // The User entity's refusals name their fields in the message (as the API's do).
    errOut(`error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

type Values = { email?: string; role?: string[]; field?: string[] };

function parse(argv: string[], withRecords: boolean): { command: string; values: Values } {
  if (argv.some((arg) => arg === '--password' || arg.startsWith('--password=')))
    throw new UsageError(PASSWORD_ARGUMENT_REFUSED);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        email: { type: 'string' },
        role: { type: 'string', multiple: true },
        field: { type: 'string', multiple: true },
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
  if (!Object.hasOwn(COMMANDS, command) || (COMMANDS[command].records && !withRecords))
    throw new UsageError(`unknown command "${command}"`);
  const spec = COMMANDS[command];
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
  for (const name of Object.keys(values)) {
    if (!spec.allowed.includes(name)) throw new UsageError(`${command} does not take --${name}`);
    // People without a User entity have an e-mail, a password and roles: nothing else.
    if (name === 'field' && !withRecords) throw new UsageError('--field needs a User entity in the blueprint');
  }
  for (const name of spec.required) {
    if (values[name as keyof typeof values] === undefined) throw new UsageError(`${command} needs --${name}`);
  }
  return { command, values };
}

function email(values: Values): string {
  return sentAddress(values).normalized;
}

/** --email in both forms: a User record may hold it as written (user-records.ts, byAddress). */
function sentAddress(values: Values): EmailAddress {
  const address = emailAddress(values.email ?? '');
  if (!address) throw new InputError(`"${values.email}" is not a valid e-mail address`);
  return address;
}

function roles(values: Values): string[] {
  const list = values.role ?? [];
  const bad = list.find((r) => !ROLE.test(r));
  if (bad !== undefined)
    throw new InputError(`"${bad}" is not a valid role name (a letter, then letters, digits, _ . : or -)`);
  return [...new Set(list)];
}

const BY_EMAIL = `SELECT "id" FROM "${USERS_TABLE}" WHERE "email" = ?`;

async function add(db: Database, values: Values, io: UsersCliIo): Promise<void> {
  const address = email(values);
  const granted = roles(values);
  const taken = () =>
    new InputError(`a user with the e-mail ${address} already exists (use set-roles to change their roles)`);
  // Checked before the password is asked for, so nobody types one for nothing.
  if (await db.read(get(BY_EMAIL, [address]))) throw taken();
  const password = await io.readPassword();
  const problem = passwordProblem(password);
  if (problem) throw new InputError(problem);
  const insert =
    `INSERT INTO "${USERS_TABLE}" ("id", "email", "passwordHash", "roles", "createdAt") ` + `VALUES (?, ?, ?, ?, ?)`;
  const row = [ulid(), address, hashPasswordSync(password), JSON.stringify(granted), isoNow()];
  try {
    await db.write(() => run(insert, row));
  } catch (err) {
    // Someone added the same e-mail while the password was being typed.
    if (err instanceof AppError && err.code === 'UNIQUE_CONFLICT') throw taken();
    throw err;
  }
  io.out(`added ${address} (${describeRoles(granted)})`);
}

async function list(db: Database, out: (line: string) => void): Promise<void> {
  // The hash column is never read, so it cannot be printed by mistake.
  const rows = (await db.read(all(`SELECT "email", "roles", "createdAt" FROM "${USERS_TABLE}" ORDER BY "email"`))) as {
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

async function setRoles(db: Database, values: Values, out: (line: string) => void): Promise<void> {
  const address = email(values);
  const granted = roles(values);
  const update = `UPDATE "${USERS_TABLE}" SET "roles" = ? WHERE "email" = ?`;
  const result = await db.write(() => run(update, [JSON.stringify(granted), address]));
  if (result.changes === 0) throw new InputError(`no user with the e-mail ${address}`);
  // Sessions read roles on every request, so the change applies at once.
  out(`${address} now has ${describeRoles(granted)}`);
}

async function remove(db: Database, values: Values, out: (line: string) => void): Promise<void> {
  const address = email(values);
  const user = await db.read(get(BY_EMAIL, [address]));
  if (!user) throw new InputError(`no user with the e-mail ${address}`);
  // Deleted (and counted) before the person: their foreign key would take them silently. On SQLite,
  // sessions saved before sessions had a userId column name the person in their data only; a
  // damaged row must not make json_extract fail the whole removal.
  const sessions =
    db.dialect === 'sqlite'
      ? `DELETE FROM "${SESSIONS_TABLE}" WHERE "userId" = ?
      OR CASE WHEN json_valid("data") THEN json_extract("data", '$.userId') END = ?`
      : `DELETE FROM "${SESSIONS_TABLE}" WHERE "userId" = ?`;
  const params = db.dialect === 'sqlite' ? [user.id, user.id] : [user.id];
  const ended = await db.write(function* () {
    const { changes } = yield* run(sessions, params);
    yield* run(`DELETE FROM "${USERS_TABLE}" WHERE "id" = ?`, [user.id]);
    return changes;
  });
  out(`removed ${address} (${ended} session${ended === 1 ? '' : 's'} ended)`);
}

function describeRoles(list: readonly string[]): string {
  return list.length ? `roles: ${list.join(', ')}` : 'no roles';
}

async function recordsCommand(
  records: UserRecordsAdmin,
  command: string,
  values: Values,
  io: UsersCliIo,
): Promise<void> {
  const { out } = io;
  if (command === 'list') return listRecords(records, out);
  const sent = sentAddress(values);
  const address = sent.normalized;
  const found = await records.find(sent);
  if (command === 'add') {
    const granted = roles(values);
    const fields = fieldValues(records, values);
    if (Object.hasOwn(fields, records.loginField))
      throw new UsageError(`the e-mail is --email, not --field ${records.loginField}=...`);
    const both = records.roleFields.find((f) => granted.length && Object.hasOwn(fields, f));
    if (both !== undefined) throw new UsageError(`give roles with --role or with --field ${both}=..., not both`);
    if (found?.credentials)
      throw new InputError(`${address} can already sign in (use update or set-roles to change them)`);
    if (found && Object.keys(fields).length)
      throw new InputError(`a User with the e-mail ${address} exists: add gives it a password; change it with update`);
    const password = await readValidPassword(io);
    // The roles printed are those the person holds, read back: the record's when it has role fields.
    if (found) {
      const held = await records.addCredentials(found.id, hashPasswordSync(password), granted);
      out(`${address} (User ${found.id}) can now sign in (${describeRoles(held)})`);
      return;
    }
    const added = await records.add({ ...fields, [records.loginField]: address }, hashPasswordSync(password), granted);
    out(`added ${address} (User ${added.id}, ${describeRoles(added.roles)})`);
    return;
  }
  if (!found) throw new InputError(`no User with the e-mail ${address}`);
  if (command === 'update') {
    await records.update(found.id, fieldValues(records, values));
    out(`updated User ${found.id} (${address})`);
  } else if (command === 'set-roles') {
    const granted = roles(values);
    const held = await records.setRoles(found.id, granted);
    if (!held) throw new InputError(`${address} has no password: add one with add`);
    out(`${address} now has ${describeRoles(held)}`);
  } else {
    if (!found.credentials) throw new InputError(`${address} has no password to remove`);
    const ended = await records.removeCredentials(found.id);
    out(`${address} can no longer sign in (${ended} session${ended === 1 ? '' : 's'} ended; User ${found.id} stays)`);
  }
}

/** `--field name=value`, each read as its field's type; the entity's validation does the rest. */
function fieldValues(records: UserRecordsAdmin, values: Values): Row {
  const out: Row = {};
  for (const written of values.field ?? []) {
    const eq = written.indexOf('=');
    if (eq <= 0) throw new UsageError(`--field takes name=value (got "${written}")`);
    const name = written.slice(0, eq);
    if (Object.hasOwn(out, name)) throw new UsageError(`--field ${name} is given twice`);
    const spec = records.fields.find((f) => f.name === name);
    // An unknown name goes on as text: the entity refuses it with its list of fields.
    const text = written.slice(eq + 1);
    const parsed = spec ? valueFromText(spec, text) : { ok: true as const, value: text };
    if (!parsed.ok) throw new InputError(parsed.message);
    Object.defineProperty(out, name, { value: parsed.value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

async function readValidPassword(io: UsersCliIo): Promise<string> {
  const password = await io.readPassword();
  const problem = passwordProblem(password);
  if (problem) throw new InputError(problem);
  return password;
}

async function listRecords(records: UserRecordsAdmin, out: (line: string) => void): Promise<void> {
  const rows = await records.list();
  if (rows.length === 0) {
    out('no users');
    return;
  }
  const table = [
    ['ID', 'EMAIL', 'ROLES', 'PASSWORD'],
    ...rows.map((r) => [r.id, r.email || '-', r.roles.join(',') || '-', r.password ? 'set' : 'none']),
  ];
  const widths = [0, 1, 2].map((i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) out(row.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]) : cell)).join('  '));
}
