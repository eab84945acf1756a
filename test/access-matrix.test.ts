// The permission matrix: for each fixture blueprint, every entity × operation × actor kind
// (anonymous, a person without roles, a person with each role the blueprint uses, a person with
// all of them, each API key),
// run over HTTP against the generated app and compared with an oracle that computes the expected
// outcome from the blueprint model alone (test/support/access/oracle.ts), not from the app's
// access code. Refused writes are also checked in the database: nothing written. The whole matrix
// runs once per database (SQLite, PostgreSQL): the same rules must hold on both.
//
// Records are seeded by an actor the oracle says may create them (Refs first), or straight into
// the database when no actor may. Entities whose read rule depends on a Boolean field get a
// record for each value, so row-level rules show a visible and a hidden record.
//
// Besides the two reference fixtures, the `keyed` test fixture runs too: it declares
// [auth.permissions] (with a deny and a row-level permission condition); and so do the Zebric
// identity fixtures: a blueprint without [auth] (public entities), people as User records (roles
// from the record), the actor's Zebric keys (effectiveId, type, metadata read from the person's
// record, in rules and SQL row filters), and API keys without roles under `anonymous` permissions.
//
// The oracle reads conditions with its own small reader (support/access/condition.ts and
// expression.ts), written from the format contract: it must never import runtime-lib/rules, the
// code under test, or a bug there would be mirrored and never caught. Checked below, together
// with the reader's own semantics on cases written from the contract.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { validateBlueprint } from '../generator/compile.ts';
import type { Blueprint, Entity, Field } from '../generator/model/types.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { ulid, uuid } from '../runtime-lib/core/ids.ts';
import { BP, freshDir, request, ROOT, startApp, type HttpResponse, type RunningApp } from './support/apps.ts';
import { type AppRows, appRows } from './support/database-rows.ts';
import { DATABASES, type DatabaseKind, databaseUrl } from './support/databases.ts';
import { addUser, generateApp, idempotencyKey, signIn } from './support/access/client.ts';
import {
  type ConditionActor,
  decide,
  parseCondition,
  recordPaths as conditionRecordPaths,
  roleLiterals,
  type Source,
} from './support/access/condition.ts';
import { OracleUnsupported, UNKNOWN } from './support/access/expression.ts';
import {
  type Expected,
  Oracle,
  OPERATIONS,
  type Operation,
  type OracleActor,
  recordPaths,
  rolesUsed,
} from './support/access/oracle.ts';

type Rec = Record<string, unknown>;
type ErrorBody = { error: { code: string } };

interface MatrixActor {
  label: string;
  oracle: OracleActor;
  headers: Record<string, string>;
  /** Sent on mutations only: the CSRF token of a session, an Idempotency-Key for API keys. */
  mutationHeaders: () => Record<string, string>;
}

interface Variant {
  /** '' for the default record, else e.g. "[active=false]". */
  label: string;
  overrides: Rec;
}

interface Cell {
  fixture: string;
  actor: string;
  column: string;
  op: Operation | 'field-read' | 'field-write';
  expected: string;
  got: string;
  allowed: boolean;
}

const FIXTURES = [
  { name: 'helpdesk', blueprint: 'fixtures/helpdesk/helpdesk.toml' },
  { name: 'catalog', blueprint: 'fixtures/catalog/catalog.toml' },
  { name: 'keyed', blueprint: 'test/fixtures/valid/keyed/app.toml' },
  { name: 'no-auth', blueprint: 'test/fixtures/zebric/no-auth/app.toml' },
  { name: 'user-entity', blueprint: 'test/fixtures/zebric/user-entity/app.toml' },
  { name: 'actor-keys', blueprint: 'test/fixtures/zebric/actor-keys/app.toml' },
  { name: 'agent-defaults', blueprint: 'test/fixtures/zebric/agent-defaults/app.toml' },
];

const PASSWORD = 'matrix-password-123';

const show = (e: { status: number; code?: string; included?: boolean; visible?: boolean }): string => {
  const mark = e.included ?? e.visible;
  return `${e.status}${mark === undefined ? '' : mark ? '+' : '-'}${e.code ? ` ${e.code}` : ''}`;
};

/** Entities so that every Ref target comes before the entities pointing at it. */
function dependencyOrder(model: Blueprint): Entity[] {
  const done: Entity[] = [];
  const visit = (e: Entity, seen: Set<string>) => {
    if (done.includes(e) || seen.has(e.name)) return;
    seen.add(e.name);
    for (const f of e.fields)
      if (f.ref && f.ref.entity !== e.name)
        visit(
          model.entities.find((x) => x.name === f.ref!.entity)!,
          seen,
        );
    done.push(e);
  };
  for (const e of model.entities) visit(e, new Set());
  return done;
}

let counter = 0;
/** A valid value of a field's type; unique where uniqueness may be declared. */
function sample(field: Field): unknown {
  counter += 1;
  switch (field.type) {
    case 'Text':
    case 'LongText':
      return `${field.name}-${counter}`;
    case 'Email':
      return `${field.name}-${counter}@example.com`;
    case 'Integer':
      return 100 + counter;
    case 'Float':
      return 1.5;
    case 'Boolean':
      return true;
    case 'Date':
      return '2024-02-29';
    case 'DateTime':
      return '2024-03-01T10:00:00.000Z';
    case 'JSON':
      return { n: counter };
    case 'Enum':
      return field.values![0];
    default:
      throw new Error(`no sample for ${field.type}`);
  }
}

/** The record a create makes of `body`: rules judge it with its defaults applied. */
function withDefaults(entity: Entity, body: Rec): Rec {
  const record: Rec = {};
  for (const f of entity.fields) if (!f.primaryKey && f.default !== undefined) record[f.name] = defaultOf(f);
  return { ...record, ...body };
}

/**
 * A stored value as the API (and the actor's metadata) has it, from either driver: SQLite gives a
 * Boolean as 1/0, a JSON value as its text, a DateTime as text; PostgreSQL's gives true/false,
 * the parsed JSON value and a Date.
 */
function decoded(field: Field, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (field.type === 'Boolean') return value === 1 || value === true;
  if (field.type === 'JSON') return typeof value === 'string' ? JSON.parse(value) : value;
  if (field.type === 'DateTime') return new Date(value as string | Date).toISOString();
  return value;
}

function defaultOf(field: Field): unknown {
  if (!field.default) return undefined;
  if (field.default.kind === 'now')
    return field.type === 'Date' ? new Date().toISOString().slice(0, 10) : new Date().toISOString();
  return field.default.value;
}

/** One fixture's generated app, its actors and its seeded records. */
class MatrixApp {
  readonly actors: MatrixActor[] = [];
  readonly cells: Cell[] = [];
  /** The seeded records, by entity name and variant label. */
  readonly seeded = new Map<string, Map<string, Rec>>();
  readonly variants = new Map<string, Variant[]>();
  /** Record paths any rule or permission condition reads: never changed by an update cell. */
  readonly ruleFields = new Map<string, Set<string>>();
  app!: RunningApp;
  /** The test's own connection to the app's database. */
  rows!: AppRows;

  private constructor(
    readonly name: string,
    readonly model: Blueprint,
    readonly oracle: Oracle,
  ) {}

  /** Generates and starts the app on `database`, signs the people in and seeds one record per entity (and variant). */
  static async prepare(fixture: { name: string; blueprint: string }, database: DatabaseKind): Promise<MatrixApp> {
    const validated = validateBlueprint(path.join(ROOT, fixture.blueprint), nodeSourceHost());
    expect(validated.diagnostics.filter((d) => d.severity === 'error')).to.deep.equal([]);
    const model = validated.model!;
    const m = new MatrixApp(fixture.name, model, new Oracle(model));

    const appDir = path.join(freshDir(`access-matrix-${database}-${fixture.name}`), 'app');
    await generateApp(BP, path.join(ROOT, fixture.blueprint), appDir, ROOT);
    // The app on PostgreSQL refuses to start without a session secret; the users command shares it.
    const env: Record<string, string> = {
      DATABASE_URL: await databaseUrl(database, 'matrix'),
      SESSION_SECRET: randomBytes(24).toString('hex'),
    };
    for (const key of model.auth.apiKeys) env[key.keyEnv] = `${key.name}-${randomBytes(12).toString('hex')}`;
    m.app = await startApp(appDir, env);
    try {
      await m.populate(appDir, env);
    } catch (err) {
      await m.stop();
      throw err;
    }
    return m;
  }

  /** People, API keys and seeded records. */
  private async populate(appDir: string, env: Record<string, string>): Promise<void> {
    const { model } = this;
    this.rows = await appRows(env.DATABASE_URL, appDir);

    this.actors.push({
      label: 'anonymous',
      oracle: { kind: 'anonymous', id: 'anonymous', roles: [] },
      headers: {},
      mutationHeaders: () => ({}),
    });
    if (model.auth.providers.includes('email')) {
      // One person without roles, one per role the blueprint uses, and (with two roles or more) one
      // holding them all, last role first: `$currentUser.role` must match any role held, not only
      // the first, and permissions combine the allows and denies of every role. Added with the
      // users command, which writes a User record's role fields: a `role` field alone holds one.
      const used = rolesUsed(model);
      const fields = model.auth.userRecords?.roleFields;
      const several = used.length > 1 && !(fields?.includes('role') && !fields.includes('roles'));
      const people = [[], ...used.map((r) => [r]), ...(several ? [[...used].reverse()] : [])].map((roles) => ({
        label: `person(${roles.join(',') || 'no roles'})`,
        spec: {
          email: `${roles.join('-') || 'noroles'}@matrix.example`,
          password: PASSWORD,
          roles,
          fields: this.requiredUserFields(),
        },
      }));
      await Promise.all(people.map((p) => addUser(appDir, env, p.spec)));
      for (const p of people) {
        const session = await signIn(this.app.url, `${model.slug}.sid`, p.spec.email, PASSWORD);
        const oracle = await this.person(session.actor.id, p.spec.email, p.spec.roles);
        // The app's view of the person must match the one the oracle uses.
        expect(session.actor).to.include({
          kind: 'user',
          type: 'user',
          email: p.spec.email,
          effectiveId: session.actor.id,
        });
        expect(session.actor.roles).to.deep.equal(oracle.roles);
        this.actors.push({
          label: p.label,
          oracle,
          headers: { cookie: session.cookie },
          mutationHeaders: () => ({ 'x-csrf-token': session.csrfToken }),
        });
      }
    }
    for (const key of model.auth.apiKeys) {
      this.actors.push({
        label: `key:${key.name}`,
        // The contract's API-key actor: its metadata is Zebric's agent session user (name, role).
        oracle: {
          kind: 'agent',
          type: 'agent',
          id: key.agentId,
          effectiveId: key.agentId,
          credentialId: key.credentialId,
          roles: key.roles,
          role: key.roles[0],
          scopes: key.scopes,
          metadata: { name: key.displayName, role: key.roles[0] },
        },
        headers: { authorization: `Bearer ${env[key.keyEnv]}` },
        mutationHeaders: () => ({ 'idempotency-key': idempotencyKey() }),
      });
    }

    for (const entity of dependencyOrder(model)) {
      const permissionRules = Object.values(model.auth.permissions ?? {}).flatMap((p) => [...p.allow, ...p.deny]);
      const readRules = [
        entity.access.read,
        ...permissionRules.filter((r) => r.entity === entity.name || r.entity === '*').map((r) => r.condition),
      ];
      const read = new Set(readRules.flatMap((r) => (r ? recordPaths(r) : [])));
      const all = [
        ...Object.values(entity.access),
        ...entity.fields.flatMap((f) => [f.access.read, f.access.write]),
      ].flatMap((r) => (r ? recordPaths(r) : []));
      this.ruleFields.set(entity.name, new Set([...all, ...read]));
      // A record for each value of a Boolean field the read rule depends on, so that row-level
      // rules show both a visible and a hidden record.
      const list: Variant[] = [{ label: '', overrides: {} }];
      for (const name of read) {
        const f = entity.fields.find((x) => x.name === name);
        if (f?.type === 'Boolean')
          list.push({ label: `[${name}=${!(defaultOf(f) ?? true)}]`, overrides: { [name]: !(defaultOf(f) ?? true) } });
      }
      this.variants.set(entity.name, list);
      const records = new Map<string, Rec>();
      for (const v of list) records.set(v.label, await this.seed(entity, v));
      this.seeded.set(entity.name, records);
    }
  }

  /** `--field` values for the users command: the User record's required fields without a default. */
  private requiredUserFields(): Record<string, string> {
    const records = this.model.auth.userRecords;
    const user = records && this.model.entities.find((e) => e.name === records.entity);
    if (!records || !user) return {};
    const needed = user.fields.filter(
      (f) => f.required && !f.default && !f.primaryKey && f.name !== records.loginField,
    );
    return Object.fromEntries(needed.map((f) => [f.name, String(sample(f))]));
  }

  /**
   * The contract's person: without a User entity, the roles given and `role` their first; when
   * people are User records, its record as metadata, and the roles of its role fields (which the
   * users command wrote the given ones into) or, without role fields, those given; `user` when
   * there are none (read from the database, not from the app's answer).
   */
  private async person(id: string, email: string, given: string[]): Promise<OracleActor> {
    const records = this.model.auth.userRecords;
    const base = { kind: 'user' as const, type: 'user' as const, id, effectiveId: id, email };
    if (!records) return { ...base, roles: given, role: given[0], metadata: { email, role: given[0] } };
    const user = this.model.entities.find((e) => e.name === records.entity)!;
    const row = (await this.row(user, id))!;
    const record = Object.fromEntries(user.fields.map((f) => [f.name, decoded(f, row[f.name])]));
    const fromRecord = records.roleFields.flatMap((f) =>
      typeof record[f] === 'string' ? [record[f] as string] : Array.isArray(record[f]) ? (record[f] as string[]) : [],
    );
    const held = [...new Set(records.roleFields.length ? fromRecord : given)];
    const roles = held.length ? held : ['user'];
    const name = records.nameField ? record[records.nameField] : undefined;
    return { ...base, roles, role: roles[0], metadata: { email, name, role: roles[0], ...record } };
  }

  async stop(): Promise<void> {
    await this.rows?.close();
    await this.app?.stop();
  }

  call(actor: MatrixActor, method: string, url: string, json?: unknown): Promise<HttpResponse> {
    const headers = { ...actor.headers, ...(method === 'GET' ? {} : actor.mutationHeaders()) };
    return request(this.app.url, method, url, json === undefined ? { headers } : { json, headers });
  }

  record(entity: Entity, variant: Variant): Rec {
    return this.seeded.get(entity.name)!.get(variant.label)!;
  }

  row(entity: Entity, id: unknown): Promise<Rec | undefined> {
    return this.rows.get(`SELECT * FROM "${entity.name}" WHERE "${entity.primaryKey.name}" = ?`, [id]);
  }

  count(entity: Entity): Promise<number> {
    return this.rows.count(entity.name);
  }

  /**
   * Fields sent when creating: every settable field (seed) or the required ones plus those without
   * write rules (create cells).
   */
  body(entity: Entity, variant: Variant, forSeed: boolean): Rec {
    const body: Rec = {};
    for (const f of entity.fields) {
      if (f.primaryKey || f.commandOnly || f.type === 'file') continue;
      if (Object.hasOwn(variant.overrides, f.name)) {
        body[f.name] = variant.overrides[f.name];
        continue;
      }
      if (f.default !== undefined) continue;
      if (!forSeed && !f.required && f.access.write) continue;
      if (f.ref) {
        if (f.ref.entity !== entity.name) body[f.name] = this.seeded.get(f.ref.entity)?.get('')?.[f.ref.field];
        continue;
      }
      body[f.name] = sample(f);
    }
    return body;
  }

  /** The oracle picks who seeds: an actor that may create the entity. */
  private seedActor(entity: Entity, body: Rec): MatrixActor | undefined {
    return this.actors.find(
      (a) => this.oracle.expect(entity.name, 'create', a.oracle, withDefaults(entity, body), body).status === 201,
    );
  }

  /** Creates a record as a privileged actor, or straight in the database when no actor may create it. */
  async seed(entity: Entity, variant: Variant): Promise<Rec> {
    const body = this.body(entity, variant, true);
    const actor = this.seedActor(entity, body);
    if (actor) {
      const res = await this.call(actor, 'POST', `/api/${entity.collection}`, body);
      if (res.status !== 201) throw new Error(`seeding ${entity.name} as ${actor.label}: ${res.status} ${res.text}`);
      return res.body as Rec;
    }
    const record: Rec = { [entity.primaryKey.name]: entity.primaryKey.type === 'UUID' ? uuid() : ulid() };
    for (const f of entity.fields)
      if (!f.primaryKey) record[f.name] = Object.hasOwn(body, f.name) ? body[f.name] : (defaultOf(f) ?? null);
    // The forms the app writes on both databases (runtime-lib/data/fields.ts encodeField):
    // PostgreSQL reads 1/0 as a boolean, the JSON text as jsonb and the +00:00 text as a timestamp.
    const encoded = entity.fields.map((f) => {
      const v = record[f.name];
      if (v === null) return null;
      if (f.type === 'Boolean') return v ? 1 : 0;
      if (f.type === 'JSON') return JSON.stringify(v);
      if (f.type === 'DateTime') return new Date(v as string).toISOString().replace('Z', '+00:00');
      return v;
    });
    const columns = entity.fields.map((f) => `"${f.name}"`).join(', ');
    await this.rows.run(
      `INSERT INTO "${entity.name}" (${columns}) VALUES (${entity.fields.map(() => '?').join(', ')})`,
      encoded,
    );
    return record;
  }

  /** Records one cell; returns a mismatch message or undefined. */
  cell(
    actor: MatrixActor,
    column: string,
    op: Cell['op'],
    expected: Expected & { visible?: boolean },
    got: Expected & { visible?: boolean },
  ): string | undefined {
    const e = show(expected);
    const g = show(got);
    const entry = {
      fixture: this.name,
      actor: actor.label,
      column,
      op,
      expected: e,
      got: g,
      allowed: expected.status < 300,
    };
    this.cells.push(entry);
    return e === g ? undefined : `${actor.label} ${column}: expected ${e}, got ${g}`;
  }
}

const codeOf = (res: HttpResponse) =>
  res.status >= 400 ? (res.body as ErrorBody | undefined)?.error?.code : undefined;

for (const database of DATABASES)
  describe(`access matrix (${database})`, function () {
    this.timeout(120_000);
    const setups = new Map<string, Promise<MatrixApp>>();
    before(() => {
      // All fixtures are prepared at once (generation, start, users command, seeding); each suite
      // below waits for its own.
      for (const fixture of FIXTURES) {
        const setup = MatrixApp.prepare(fixture, database);
        setup.catch(() => undefined);
        setups.set(fixture.name, setup);
      }
    });
    after(async () => {
      for (const setup of setups.values())
        await setup.then(
          (m) => m.stop(),
          () => undefined,
        );
    });

    for (const fixture of FIXTURES) {
      describe(fixture.name, () => {
        let m: MatrixApp;
        before(async () => {
          m = await setups.get(fixture.name)!;
        });
        after(() => {
          if (!m?.cells.length) return;
          const note = m.model.auth.providers.includes('email')
            ? ''
            : '; no people: the blueprint has no email provider';
          printMatrix(
            `${fixture.name} (${database})`,
            m.cells,
            m.actors.map((a) => a.label),
            note,
          );
        });

        it('lists: refusals, and only readable rows (row-level read rules)', async () => {
          const mismatches: string[] = [];
          for (const entity of m.model.entities) {
            for (const actor of m.actors) {
              const res = await m.call(actor, 'GET', `/api/${entity.collection}?limit=1000`);
              const items = res.status === 200 ? (res.body as { items: Rec[] }).items : [];
              if (res.status === 200)
                expect((res.body as { hasMore: boolean }).hasMore, 'one page holds every row').to.equal(false);
              // Every row returned must be one the actor may read.
              for (const item of items) {
                if (!m.oracle.allows(entity, 'read', actor.oracle, item))
                  mismatches.push(
                    `${actor.label} ${entity.name}.list returned unreadable row ` +
                      `${String(item[entity.primaryKey.name])}`,
                  );
              }
              for (const v of m.variants.get(entity.name)!) {
                const rec = m.record(entity, v);
                const expected = m.oracle.expect(entity.name, 'list', actor.oracle, rec);
                const included =
                  res.status === 200
                    ? items.some((i) => i[entity.primaryKey.name] === rec[entity.primaryKey.name])
                    : undefined;
                const mismatch = m.cell(actor, `${entity.name}${v.label}.list`, 'list', expected, {
                  status: res.status,
                  code: codeOf(res),
                  included,
                });
                if (mismatch) mismatches.push(mismatch);
              }
            }
          }
          expect(mismatches).to.deep.equal([]);
        });

        it('gets: 200, refused, or 404 for a record the read rule hides; field read rules hide fields', async () => {
          const mismatches: string[] = [];
          for (const entity of m.model.entities) {
            const guarded = entity.fields.filter((f) => f.access.read);
            for (const actor of m.actors) {
              for (const v of m.variants.get(entity.name)!) {
                const rec = m.record(entity, v);
                const expected = m.oracle.expect(entity.name, 'get', actor.oracle, rec);
                const res = await m.call(
                  actor,
                  'GET',
                  `/api/${entity.collection}/${String(rec[entity.primaryKey.name])}`,
                );
                const mismatch = m.cell(actor, `${entity.name}${v.label}.get`, 'get', expected, {
                  status: res.status,
                  code: codeOf(res),
                });
                if (mismatch) mismatches.push(mismatch);
                if (v.label !== '') continue;
                for (const f of guarded) {
                  const visible =
                    expected.status === 200 ? m.oracle.fieldVisible(entity.name, f.name, actor.oracle, rec) : undefined;
                  const got = {
                    status: res.status,
                    code: codeOf(res),
                    visible: res.status === 200 ? Object.hasOwn(res.body as Rec, f.name) : undefined,
                  };
                  const fieldMismatch = m.cell(
                    actor,
                    `${entity.name}.${f.name}:read`,
                    'field-read',
                    { ...expected, visible },
                    got,
                  );
                  if (fieldMismatch) mismatches.push(fieldMismatch);
                }
              }
            }
          }
          expect(mismatches).to.deep.equal([]);
        });

        it('creates: allowed ones store the record, refused ones write nothing', async () => {
          const mismatches: string[] = [];
          for (const entity of m.model.entities) {
            for (const actor of m.actors) {
              const body = m.body(entity, { label: '', overrides: {} }, false);
              const expected = m.oracle.expect(entity.name, 'create', actor.oracle, withDefaults(entity, body), body);
              const before = await m.count(entity);
              const res = await m.call(actor, 'POST', `/api/${entity.collection}`, body);
              const mismatch = m.cell(actor, `${entity.name}.create`, 'create', expected, {
                status: res.status,
                code: codeOf(res),
              });
              if (mismatch) mismatches.push(mismatch);
              const written = (await m.count(entity)) - before;
              if (written !== (res.status === 201 ? 1 : 0))
                mismatches.push(
                  `${actor.label} ${entity.name}.create answered ${res.status} but wrote ${written} rows`,
                );
            }
          }
          expect(mismatches).to.deep.equal([]);
        });

        it('updates (checked against the stored record), field write rules; refused ones change nothing', async () => {
          const mismatches: string[] = [];
          for (const entity of m.model.entities) {
            // A plain field no rule reads, so updating it never changes what the oracle decides.
            const target = entity.fields.find(
              (f) =>
                !f.primaryKey &&
                !f.commandOnly &&
                !f.unique &&
                !f.ref &&
                !f.access.write &&
                !m.ruleFields.get(entity.name)!.has(f.name) &&
                ['Text', 'LongText', 'Integer', 'Float'].includes(f.type),
            );
            if (!target) throw new Error(`${entity.name}: no plain field to update`);
            const guarded = entity.fields.filter((f) => f.access.write && !f.commandOnly);
            for (const actor of m.actors) {
              for (const v of m.variants.get(entity.name)!) {
                const rec = m.record(entity, v);
                const id = rec[entity.primaryKey.name];
                const attempts: Array<{ column: string; op: Cell['op']; body: Rec }> = [
                  {
                    column: `${entity.name}${v.label}.update`,
                    op: 'update',
                    body: { [target.name]: sample(target) },
                  },
                ];
                if (v.label === '')
                  for (const f of guarded)
                    attempts.push({
                      column: `${entity.name}.${f.name}:write`,
                      op: 'field-write',
                      body: { [f.name]: sample(f) },
                    });
                for (const attempt of attempts) {
                  const expected = m.oracle.expect(entity.name, 'update', actor.oracle, rec, attempt.body);
                  const before = await m.row(entity, id);
                  const res = await m.call(actor, 'PUT', `/api/${entity.collection}/${String(id)}`, attempt.body);
                  const mismatch = m.cell(actor, attempt.column, attempt.op, expected, {
                    status: res.status,
                    code: codeOf(res),
                  });
                  if (mismatch) mismatches.push(mismatch);
                  const after = await m.row(entity, id);
                  const [field] = Object.keys(attempt.body);
                  if (res.status === 200)
                    expect(after?.[field], `${actor.label} ${attempt.column} stored`).to.equal(attempt.body[field]);
                  else
                    expect(
                      after,
                      `${actor.label} ${attempt.column} refused with ${res.status} but changed the row`,
                    ).to.deep.equal(before);
                }
              }
            }
          }
          expect(mismatches).to.deep.equal([]);
        });

        it('deletes (a fresh record per cell): allowed ones remove it, refused ones keep it', async () => {
          const mismatches: string[] = [];
          for (const entity of m.model.entities) {
            for (const actor of m.actors) {
              for (const v of m.variants.get(entity.name)!) {
                const fresh = await m.seed(entity, v);
                const id = fresh[entity.primaryKey.name];
                const expected = m.oracle.expect(entity.name, 'delete', actor.oracle, fresh);
                const res = await m.call(actor, 'DELETE', `/api/${entity.collection}/${String(id)}`);
                const mismatch = m.cell(actor, `${entity.name}${v.label}.delete`, 'delete', expected, {
                  status: res.status,
                  code: codeOf(res),
                });
                if (mismatch) mismatches.push(mismatch);
                const exists = (await m.row(entity, id)) !== undefined;
                if (exists !== (res.status !== 204))
                  mismatches.push(
                    `${actor.label} ${entity.name}${v.label}.delete answered ${res.status} but the row ` +
                      `${exists ? 'is still there' : 'is gone'}`,
                  );
              }
            }
          }
          expect(mismatches).to.deep.equal([]);
        });
      });
    }

    // Declared last: mocha runs it after every fixture's suite.
    describe('coverage', () => {
      it('has an allowed and a denied cell for every operation, and every status the contract names', async () => {
        const cells = (
          await Promise.all(
            [...setups.values()].map((setup) =>
              setup.then(
                (m) => m.cells,
                () => [],
              ),
            ),
          )
        ).flat();
        for (const op of OPERATIONS) {
          const ofOp = cells.filter((c) => c.op === op);
          expect(
            ofOp.filter((c) => c.allowed),
            `allowed ${op} cells`,
          ).not.to.be.empty;
          expect(
            ofOp.filter((c) => !c.allowed),
            `denied ${op} cells`,
          ).not.to.be.empty;
        }
        const statuses = new Set(cells.map((c) => c.expected.split(' ')[0].replace(/[+-]$/, '')));
        expect([...statuses].sort()).to.include.members(['200', '201', '204', '401', '403', '404']);
        console.log(`      matrix (${database}): ${cells.length} cells over ${FIXTURES.length} blueprints`);
      });
    });
  });

/** One block per entity: actors down, operations across, each cell the status seen (+/-: row listed / field shown). */
function printMatrix(fixture: string, cells: Cell[], actorLabels: string[], note = ''): void {
  // Operations in route order; within one, the default record before its variants.
  const order: Array<Cell['op']> = ['list', 'get', 'field-read', 'create', 'update', 'field-write', 'delete'];
  const rank = new Map(cells.map((c) => [c.column, order.indexOf(c.op)]));
  const columns = [...new Set(cells.map((c) => c.column))].sort((a, b) => {
    const [ea, eb] = [a.split(/[.[]/)[0], b.split(/[.[]/)[0]];
    return ea !== eb ? (ea < eb ? -1 : 1) : rank.get(a)! - rank.get(b)! || a.length - b.length;
  });
  const byEntity = new Map<string, string[]>();
  for (const col of columns) {
    const entity = col.split(/[.[]/)[0];
    byEntity.set(entity, [...(byEntity.get(entity) ?? []), col]);
  }
  const lines: string[] = [
    `\n      ${fixture}: ${cells.length} cells (status; +/- = record listed / field shown; ` +
      `! = differs from the oracle${note})`,
  ];
  const width = Math.max(...actorLabels.map((a) => a.length));
  for (const [, cols] of byEntity) {
    const heads = cols.map((c) => c.slice(c.split(/[.[]/)[0].length).replace(/^\./, ''));
    const widths = cols.map((c, i) =>
      Math.max(heads[i].length, ...cells.filter((x) => x.column === c).map((x) => x.got.split(' ')[0].length + 1)),
    );
    lines.push(
      `      ${cols[0].split(/[.[]/)[0].padEnd(width)}  ${heads.map((h, i) => h.padEnd(widths[i])).join('  ')}`,
    );
    for (const actor of actorLabels) {
      const row = cols.map((c, i) => {
        const x = cells.find((y) => y.column === c && y.actor === actor);
        if (!x) return ''.padEnd(widths[i]);
        return `${x.got.split(' ')[0]}${x.got === x.expected ? '' : '!'}`.padEnd(widths[i]);
      });
      lines.push(`      ${actor.padEnd(width)}  ${row.join('  ')}`);
    }
  }
  console.log(lines.join('\n'));
}

/** Module specifiers of a TypeScript file's import and re-export statements, and of dynamic imports. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  // A statement starts a line and may span several (import { a,\n b } from '...').
  const statements = /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
  const dynamic = /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;
  return [...text.matchAll(statements), ...text.matchAll(dynamic)].map((m) => m[1] ?? m[2]);
}

describe('access oracle independence', () => {
  it('no file of the oracle or the matrix imports runtime-lib/rules (the code the matrix checks)', () => {
    const folder = path.join(ROOT, 'test/support/access');
    const files = [
      path.join(ROOT, 'test/access-matrix.test.ts'),
      ...fs.readdirSync(folder).map((f) => path.join(folder, f)),
    ];
    expect(files.map((f) => path.relative(ROOT, f))).to.include.members([
      'test/support/access/oracle.ts',
      'test/support/access/condition.ts',
      'test/support/access/expression.ts',
    ]);
    const rules = path.join(ROOT, 'runtime-lib/rules') + path.sep;
    const offending: string[] = [];
    const seen: string[] = [];
    for (const file of files) {
      for (const spec of importsOf(file)) {
        seen.push(spec);
        if (spec.startsWith('.') && path.resolve(path.dirname(file), spec).startsWith(rules))
          offending.push(`${path.relative(ROOT, file)}: ${spec}`);
      }
    }
    expect(offending).to.deep.equal([]);
    // The reader does find import lines (a reader that found none would prove nothing).
    expect(seen).to.include.members([
      './condition.ts',
      './expression.ts',
      './support/access/oracle.ts',
      '../generator/compile.ts',
    ]);
  });
});

describe('access oracle condition reader (the contract, independently)', () => {
  const admin: ConditionActor = {
    kind: 'user',
    id: 'u1',
    email: 'a@x.example',
    roles: ['editor', 'admin'],
    role: 'editor',
  };
  const agent: ConditionActor = { kind: 'agent', id: 'agent-1', roles: ['agent'], role: 'agent' };
  const judge = (source: Source, actor: ConditionActor | undefined, record: Rec | typeof UNKNOWN = {}) =>
    decide(parseCondition(source), { actor, record });

  it('shorthands and constants', () => {
    expect([true, false, 'public', 'authenticated'].map((s) => judge(s, undefined))).to.deep.equal([
      true,
      false,
      true,
      false,
    ]);
    expect(judge('authenticated', agent)).to.equal(true);
    expect(judge('owner', admin, { ownerId: 'u1' })).to.equal(true);
    expect(judge('owner', admin, { ownerId: 'u2' })).to.equal(false);
    expect(judge('owner', admin, UNKNOWN)).to.equal('depends');
    expect(judge('owner', undefined, { ownerId: 'anonymous' })).to.equal(false);
  });

  it('tables: $currentUser.role matches any role held, missing values never match, lists by membership', () => {
    expect(judge({ '$currentUser.role': 'admin' }, admin), 'second role').to.equal(true);
    expect(judge({ '$currentUser.role': 'admin' }, agent)).to.equal(false);
    expect(judge({ '$currentUser.role': 'admin' }, undefined)).to.equal(false);
    expect(judge({ '$currentUser.roles': 'agent' }, agent)).to.equal(true);
    expect(judge({ assignee: '$currentUser.id' }, agent, { assignee: 'agent-1' })).to.equal(true);
    expect(judge({ assignee: '$currentUser.id' }, agent, UNKNOWN)).to.equal('depends');
    // An agent has no e-mail: a record without one must not match it.
    expect(judge({ email: '$currentUser.email' }, agent, {})).to.equal(false);
    expect(judge({ email: '$currentUser.email' }, agent, { email: null })).to.equal(false);
    expect(judge({ active: true, tier: 'pro' }, undefined, { active: true, tier: 'pro' })).to.equal(true);
    expect(judge({ active: true, tier: 'pro' }, undefined, { active: true, tier: 'basic' })).to.equal(false);
    expect(judge({ or: [{ '$currentUser.role': 'agent' }, { active: true }] }, undefined, UNKNOWN)).to.equal('depends');
    expect(judge({ and: [{ '$currentUser.role': 'agent' }, { active: true }] }, admin, UNKNOWN)).to.equal(false);
  });

  it('expressions: precedence, strict semantics, contains / in, missing properties, prototypes', () => {
    const cases: Array<[string, unknown]> = [
      ['1 + 2 * 3 == 7', true],
      ['(1 + 2) * 3 == 9', true],
      ['10 - 4 - 3 == 3', true],
      ['7 % 4 == 3 && 8 / 2 == 4', true],
      ['-2 + 5 == 3', true],
      ['!true == false', true],
      ['!(1 == 2)', true],
      ['1 < 2 == true', true],
      ['false && true || true', true],
      ['true || false && false', true],
      ["1 == '1'", false],
      ['1 && true', false],
      ["!'yes'", true],
      ["['a', 'b'] contains 'b'", true],
      ["'b' in ['a', 'b']", true],
      ["'c' in ['a', 'b']", false],
      ["'helpdesk' contains 'desk'", true],
      ["'desk' in 'helpdesk'", true],
      ["'10' < '9'", true],
      ['null == null', true],
      ['record.nope == null', false],
      ['record.nope != null', true],
      ['record.nope > 1', false],
      // Prototypes are unreachable: these read undefined, like any missing property.
      ['record.constructor == record.nope && record.__proto__ == record.nope && record.toString == record.nope', true],
      ["record.status == 'open' && record.n >= 3", true],
      ["actor.roles contains 'admin' && actor.role == 'editor'", true],
      ["actor.roles == ['editor', 'admin']", false],
    ];
    for (const [source, want] of cases) expect(judge(source, admin, { status: 'open', n: 3 }), source).to.equal(want);
  });

  it(
    'expressions: with no actor, anything reading actor fails closed; ' +
      'the record unknown gives a three-valued answer',
    () => {
      const rule = "record.active == true || actor.roles contains 'admin'";
      expect(judge(rule, undefined, { active: true })).to.equal(false);
      expect(judge(rule, admin, UNKNOWN)).to.equal(true);
      expect(judge(rule, agent, UNKNOWN)).to.equal('depends');
      expect(judge(rule, agent, { active: false })).to.equal(false);
      expect(judge("record.active == true && actor.roles contains 'admin'", agent, UNKNOWN)).to.equal(false);
      expect(judge('!(record.active == true)', undefined, UNKNOWN)).to.equal('depends');
      expect(judge('record.active == true', undefined, { active: true })).to.equal(true);
    },
  );

  it(
    "Zebric's actor keys: effectiveId, type, metadata; " +
      '$currentUser.id is the effective id, other keys fall back to the metadata',
    () => {
      const person: ConditionActor = {
        kind: 'user',
        type: 'user',
        id: 'u1',
        effectiveId: 'u1',
        email: 'a@x.example',
        roles: ['user'],
        role: 'user',
        metadata: { email: 'a@x.example', name: 'Ann', role: 'user', team: 'blue' },
      };
      const delegated: ConditionActor = {
        kind: 'agent',
        type: 'agent',
        id: 'agent-1',
        effectiveId: 'sarah',
        roles: [],
        metadata: { name: 'Bot' },
      };
      expect(
        judge("actor.effectiveId == 'sarah' && actor.id == 'agent-1' && actor.type == 'agent'", delegated),
      ).to.equal(true);
      expect(judge({ ownerId: '$currentUser.id' }, delegated, { ownerId: 'sarah' })).to.equal(true);
      expect(judge({ ownerId: '$currentUser.id' }, delegated, { ownerId: 'agent-1' })).to.equal(false);
      expect(judge('owner', delegated, { ownerId: 'sarah' })).to.equal(true);
      expect(judge('owner', delegated, { ownerId: 'agent-1' })).to.equal(false);
      expect(judge({ team: '$currentUser.team' }, person, { team: 'blue' })).to.equal(true);
      expect(judge({ team: '$currentUser.team' }, delegated, { team: 'blue' }), 'no such metadata: missing').to.equal(
        false,
      );
      expect(judge({ '$currentUser.name': 'Ann', '$currentUser.email': 'a@x.example' }, person)).to.equal(true);
      expect(judge('record.team == actor.metadata.team', person, UNKNOWN)).to.equal('depends');
      expect(judge("actor.metadata.name == 'Bot' && actor.metadata.email != 'a@x.example'", delegated)).to.equal(true);
      expect(judge("actor.type == 'user'", undefined)).to.equal(false);
    },
  );

  it('collects record paths and role literals', () => {
    expect(
      conditionRecordPaths(parseCondition("record.a == 1 || (record.b.c in ['x'] && actor.id == record.d)")),
    ).to.deep.equal(['a', 'b.c', 'd']);
    expect(conditionRecordPaths(parseCondition({ or: [{ x: 1 }, 'owner'] }))).to.deep.equal(['x', 'userId', 'ownerId']);
    expect(
      roleLiterals(
        parseCondition("actor.roles contains 'a' || actor.role == 'b' || actor.role in ['c', 'd'] || actor.id == 'e'"),
      ),
    ).to.deep.equal(['a', 'b', 'c', 'd']);
    expect(
      roleLiterals(parseCondition({ or: [{ '$currentUser.role': 'x' }, { '$currentUser.id': 'y' }] })),
    ).to.deep.equal(['x']);
  });

  it('throws on what it does not support instead of guessing', () => {
    const unsupported: Array<[Source, Rec | typeof UNKNOWN]> = [
      ['foo == 1', {}],
      ['record.a ==', {}],
      ['record.a = 1', {}],
      ["record.a == 'open", {}],
      ['f(1)', {}],
      ['record[0] == 1', {}],
      ['record.customer.id == actor.id', { customer: { id: 'u1' } }],
      ['now > record.at', { at: '2024-01-01' }],
      ["input.x == 'y'", {}],
      ["actor.displayName == 'x'", {}],
      ["record.n < 'x'", { n: 1 }],
      ['record.n + 1 == 2', { n: 'one' }],
      ['record.n / 0 == 1', { n: 1 }],
      [{ '$other.id': 'x' }, {}],
      [{ '$currentUser.credentialId': 'x' }, {}],
      [{ 'customer.id': '$currentUser.id' }, {}],
      [{ a: ['x'] }, {}],
      [{}, {}],
      [{ or: [] }, {}],
      [{ or: [true], a: 1 }, {}],
    ];
    for (const [source, record] of unsupported) {
      expect(() => judge(source, admin, record), JSON.stringify(source)).to.throw(OracleUnsupported);
    }
  });
});
