// People as the records of the blueprint's `User` entity (when it has an Email field): sign-up and
// the users command create User records, a session's actor is its record (id, roles from its
// `role` / `roles` fields, the record as metadata), and sign-in finds the record by its login
// field in any letter case, so changing the record's e-mail changes how its person signs in.
//
// When the entity has role fields, they alone say what roles its person holds: the users command's
// --role writes them (one source of truth: the role a person acts with is the one the record
// shows). Credentials stay out of the record, in `_bp_users`: the record's id, the password hash
// and, only when the entity has no role field, the roles the users command granted. Its id is a
// foreign key to the record with ON DELETE CASCADE,
// and sessions reference it the same way: deleting the User record, by any path, removes its
// credentials and ends its sessions in the same transaction.

import { ANONYMOUS, type Actor, makeActor, SYSTEM } from '../../core/actor.ts';
import { AppError, type ErrorDetail } from '../../core/errors.ts';
import { all, type Database, get, run, type Work } from '../../data/database.ts';
import type { EntityStore, RequestContext } from '../../data/entity-store.ts';
import type { FieldSpec, Row } from '../../data/fields.ts';
import type { ActiveTrace } from '../../observe/tracing.ts';
import { emailTaken, type People } from './people.ts';
import { SESSIONS_TABLE } from './session-store.ts';
import { type EmailAddress, isoNow, parseRoles, sessionCredential, USERS_TABLE } from './users.ts';

export interface UserRecordsConfig {
  /** The store of the `User` entity. */
  store: EntityStore;
  /** The Email field people sign in with: `email` when it is one, else the first Email field. */
  loginField: string;
  /** Fields of the record that give roles: `role` (one role) and `roles` (a list), those it has. */
  roleFields: readonly string[];
  /** The field `actor.metadata.name` reads, when the entity has a `name`. */
  nameField?: string;
}

/** A role nobody claims at sign-up, and a person with no role at all holds (as in Zebric). */
export const DEFAULT_PERSON_ROLE = 'user';

interface Credentials {
  id: string;
  passwordHash: string;
  roles: string;
  createdAt: string;
}

/** What the users command does with User records (users-cli.ts). */
export interface UserRecordsAdmin {
  loginField: string;
  /** The record's role fields, which --role writes; none: roles are kept with the credentials. */
  roleFields: readonly string[];
  /** The User entity's fields, to read `--field` values by type. */
  fields: readonly FieldSpec[];
  /** The record with this e-mail (any letter case), and whether its person has a password. */
  find(address: EmailAddress): Promise<{ id: string; record: Row; credentials?: Credentials } | undefined>;
  /**
   * Creates the record (validated as a User create) with its credentials, in one transaction;
   * `roles`, when given, in its role fields. Resolves to its id and the roles its person holds.
   */
  add(fields: Row, passwordHash: string, roles: readonly string[]): Promise<{ id: string; roles: string[] }>;
  /** Gives an existing record a password and, when given, roles; resolves to the roles held. */
  addCredentials(id: string, passwordHash: string, roles: readonly string[]): Promise<string[]>;
  /** Changes fields of the record, validated as a User update. */
  update(id: string, changes: Row): Promise<void>;
  /** Replaces the person's roles; undefined when the record has no password (no person). */
  setRoles(id: string, roles: readonly string[]): Promise<string[] | undefined>;
  /** Removes the password (and granted roles), ending the sessions; resolves to how many ended. */
  removeCredentials(id: string): Promise<number>;
  /** Every record: id, login e-mail, roles as a session would hold them, password or not. */
  list(): Promise<Array<{ id: string; email: string; roles: string[]; password: boolean; createdAt?: string }>>;
}

/** `config.store` must be a store of `db`: the record and its credentials are written in one transaction. */
export function userRecords(db: Database, config: UserRecordsConfig): People & { admin: UserRecordsAdmin } {
  const { store, loginField } = config;
  if (store.db !== db) throw new Error('userRecords: the User store must use the same database');
  const table = store.spec.sql[db.dialect].table;
  const pk = `"${store.spec.primaryKey}"`;
  const login = `"${loginField}"`;
  // The login field is a unique Email field, so it has a key column (data/fields.ts FieldSpec.key):
  // the address as both databases compare it, under a unique index that serves the lookup.
  const key = store.spec.fields.find((f) => f.name === loginField)?.key;
  if (key === undefined) throw new Error(`userRecords: the login field ${loginField} has no key column`);
  const creds = `"${USERS_TABLE}"`;
  const sql = {
    credentials: `SELECT "id", "passwordHash", "roles", "createdAt" FROM ${creds} WHERE "id" = ?`,
    insert: `INSERT INTO ${creds} ("id", "passwordHash", "roles", "createdAt") VALUES (?, ?, ?, ?)`,
    // By the key column: a record holds its address as written through the API or normalized
    // (sign-up, the users command), and either way its key is the one the address sent has.
    login:
      `SELECT u.${pk} AS "id", c."passwordHash" AS "passwordHash" FROM ${table} u ` +
      `JOIN ${creds} c ON c."id" = u.${pk} WHERE u."${key}" = ?`,
    idByEmail: `SELECT ${pk} AS "id" FROM ${table} WHERE "${key}" = ?`,
    setRoles: `UPDATE ${creds} SET "roles" = ? WHERE "id" = ?`,
    sessions: `SELECT COUNT(*) AS "n" FROM "${SESSIONS_TABLE}" WHERE "userId" = ?`,
    removeCredentials: `DELETE FROM ${creds} WHERE "id" = ?`,
    ids: `SELECT ${pk} AS "id" FROM ${table} ORDER BY lower(${login}), ${pk}`,
  };
  /** Fields sign-up never takes: the id is the server's, and roles are given, not chosen. */
  const notAtSignup = new Set([store.spec.primaryKey, ...config.roleFields]);
  /** The users command's writes: the app's own trusted work. */
  const system: RequestContext = { actor: SYSTEM };

  function* credentialsOf(id: string): Work<Credentials | undefined> {
    return (yield* get(sql.credentials, [id])) as Credentials | undefined;
  }

  function* insertCredentials(id: string, passwordHash: string, roles: readonly string[]): Work<void> {
    yield* run(sql.insert, [id, passwordHash, JSON.stringify(roles), isoNow()]);
  }

  function* idByEmail(address: EmailAddress): Work<string | undefined> {
    const row = yield* get(sql.idByEmail, [address.normalized]);
    return row && String(row.id);
  }

  function actorOf(record: Row, credentials: Credentials): Actor {
    const id = String(record[store.spec.primaryKey]);
    const held = [...new Set(config.roleFields.length ? rolesOfRecord(record) : parseRoles(credentials.roles))];
    const roles = held.length ? held : [DEFAULT_PERSON_ROLE];
    const email = typeof record[loginField] === 'string' ? (record[loginField] as string) : undefined;
    const name = config.nameField === undefined ? undefined : record[config.nameField];
    return makeActor({
      kind: 'user',
      id,
      ...(email === undefined ? {} : { email }),
      roles,
      role: roles[0],
      credentialId: sessionCredential(id),
      // As Zebric builds it (e-mail, name, role), then the record's own fields.
      metadata: Object.freeze({ email, name, role: roles[0], ...record }),
    });
  }

  function rolesOfRecord(record: Row): string[] {
    return config.roleFields.flatMap((f) => rolesIn(record[f]));
  }

  /**
   * The role fields holding `roles`: a `roles` field takes the list, a `role` field the first; a
   * `role` field alone holds one role at most. Empty without role fields (roles stay with the
   * credentials).
   */
  function roleFieldValues(roles: readonly string[]): Row {
    const out: Row = {};
    const fields = config.roleFields;
    if (fields.includes('roles')) out.roles = [...roles];
    else if (roles.length > 1 && fields.includes('role'))
      throw new AppError(
        'VALIDATION_FAILED',
        `${store.spec.name}.role holds one role: give one --role (got ${roles.join(', ')})`,
      );
    if (fields.includes('role')) out.role = roles[0] ?? null;
    return out;
  }

  /** What the credentials keep of `roles`: nothing when the record's role fields hold them. */
  const grantedRoles = (roles: readonly string[]): readonly string[] => (config.roleFields.length ? [] : roles);

  /** Writes `roles` into the record's role fields (as the app's own work), when it has any. */
  function* writeRoles(id: string, roles: readonly string[]): Work<void> {
    if (config.roleFields.length) yield* store.update(system, id, roleFieldValues(roles));
  }

  function* heldRoles(id: string): Work<string[]> {
    const held = yield* actorWork(id);
    return held ? [...held.roles] : [];
  }

  function* actorWork(id: string): Work<Actor | undefined> {
    const credentials = yield* credentialsOf(id);
    const record = credentials && (yield* store.fetch(id));
    return record && credentials ? actorOf(record, credentials) : undefined;
  }

  function actor(trace: ActiveTrace | undefined, id: string): Promise<Actor | undefined> {
    return db.read(actorWork(id), trace);
  }

  /** Refusals sign-up owes before any work: the login field under its own name, ids and roles. */
  function signupProblems(fields: Row): ErrorDetail[] {
    const problems: ErrorDetail[] = [];
    if (loginField !== 'email' && Object.hasOwn(fields, loginField))
      problems.push({ field: loginField, code: 'USE_EMAIL', message: `send ${loginField} as "email"` });
    for (const name of Object.keys(fields).filter((k) => notAtSignup.has(k))) {
      const why = name === store.spec.primaryKey ? 'the id is given by the server' : 'roles are given, not chosen';
      problems.push({ field: name, code: 'FIELD_WRITE_DENIED', message: `sign-up cannot set ${name}: ${why}` });
    }
    return problems;
  }

  const people: People = {
    // The form offers what an anonymous caller may set: no field behind a write rule.
    signupFields: store.spec.fields.filter(
      (f) =>
        !f.primaryKey &&
        !f.commandOnly &&
        !notAtSignup.has(f.name) &&
        f.name !== loginField &&
        f.type !== 'file' &&
        store.access.policy.fields?.[f.name]?.write === undefined,
    ),
    async login(trace, address) {
      const row = await db.read(get(sql.login, [address.normalized]), trace);
      return row && { id: String(row.id), passwordHash: String(row.passwordHash) };
    },
    actor,
    emailTaken: async (trace, address) => (await db.read(idByEmail(address), trace)) !== undefined,
    async signUp(trace, email, fields, hash) {
      const problems = signupProblems(fields);
      if (problems.length) {
        throw new AppError('FORBIDDEN', problems.map((p) => p.message).join('; '), { details: problems });
      }
      const ctx: RequestContext = { actor: ANONYMOUS, trace };
      const signedUp = await db.write(function* () {
        const record = yield* signUpRecord(ctx, { ...fields, [loginField]: email }, fields);
        const created = String(record[store.spec.primaryKey]);
        yield* insertCredentials(created, hash, []);
        return yield* actorWork(created);
      }, trace);
      if (!signedUp) throw new AppError('INTERNAL_ERROR', 'the new person cannot be read back');
      return signedUp;
    },
  };

  /** The User create of a sign-up, its refusals worded for someone who is signing up. */
  function* signUpRecord(ctx: RequestContext, body: Row, fields: Row): Work<Row> {
    try {
      return yield* store.create(ctx, body, { rowRules: false });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      if (err.code === 'UNIQUE_CONFLICT' && err.details?.some((d) => d.field === loginField)) throw emailTaken();
      if (err.code === 'UNAUTHENTICATED') {
        // A field write rule refused the anonymous caller: name the fields, as a refusal of sign-up.
        const guarded = Object.keys(fields).filter((f) => store.access.policy.fields?.[f]?.write !== undefined);
        throw new AppError('FORBIDDEN', `sign-up cannot set ${guarded.join(', ')}`, {
          details: guarded.map((field) => ({ field, code: 'FIELD_WRITE_DENIED', message: `${field} is not writable` })),
        });
      }
      throw err;
    }
  }

  const admin: UserRecordsAdmin = {
    loginField,
    roleFields: config.roleFields,
    fields: store.spec.fields,
    async find(address) {
      return db.read(
        (function* () {
          const id = yield* idByEmail(address);
          const record = id === undefined ? undefined : yield* store.fetch(id);
          if (id === undefined || !record) return undefined;
          return { id, record, credentials: yield* credentialsOf(id) };
        })(),
      );
    },
    add(fields, passwordHash, roles) {
      return db.write(function* () {
        const record = yield* store.create(system, roles.length ? { ...fields, ...roleFieldValues(roles) } : fields);
        const id = String(record[store.spec.primaryKey]);
        yield* insertCredentials(id, passwordHash, grantedRoles(roles));
        return { id, roles: yield* heldRoles(id) };
      });
    },
    addCredentials(id, passwordHash, roles) {
      return db.write(function* () {
        if (roles.length) yield* writeRoles(id, roles);
        yield* insertCredentials(id, passwordHash, grantedRoles(roles));
        return yield* heldRoles(id);
      });
    },
    async update(id, changes) {
      await db.write(() => store.update(system, id, changes));
    },
    setRoles(id, roles) {
      return db.write(function* () {
        // Only a person (a record with a password) is given roles.
        if ((yield* run(sql.setRoles, [JSON.stringify(grantedRoles(roles)), id])).changes === 0) return undefined;
        yield* writeRoles(id, roles);
        return yield* heldRoles(id);
      });
    },
    removeCredentials(id) {
      return db.write(function* () {
        const sessions = yield* get(sql.sessions, [id]);
        // The sessions go with the credentials (ON DELETE CASCADE).
        yield* run(sql.removeCredentials, [id]);
        return Number(sessions?.n ?? 0);
      });
    },
    list() {
      return db.read(
        (function* () {
          const listed = [];
          for (const row of yield* all(sql.ids)) {
            const id = String(row.id);
            const record = yield* store.fetch(id);
            if (!record) continue;
            const credentials = yield* credentialsOf(id);
            const email = typeof record[loginField] === 'string' ? (record[loginField] as string) : '';
            const roles = credentials ? [...actorOf(record, credentials).roles] : rolesOfRecord(record);
            listed.push({ id, email, roles, password: credentials !== undefined, createdAt: credentials?.createdAt });
          }
          return listed;
        })(),
      );
    },
  };
  return { ...people, admin };
}

/** A `role` field gives one role, a `roles` field a list; anything else gives none. */
function rolesIn(value: unknown): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  return Array.isArray(value) ? value.filter((r): r is string => typeof r === 'string' && r !== '') : [];
}
