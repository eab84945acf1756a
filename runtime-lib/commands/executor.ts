// Domain commands: the one executor every surface calls (HTTP now; MCP,
// pages and workflow steps later). Nothing here depends on HTTP: it takes an actor and input.
//
// Order of checks: authenticated actor (401); API-key scopes (403); input (400); record loaded
// with the relations its conditions read (404); policy (403); availableWhen (409).
//
// A command without a handler is one transaction, as an entity write is (data/idempotency.ts
// runIdempotent): the Idempotency-Key's lookup, the record read and locked (PostgreSQL's FOR
// UPDATE), the checks, the mutations, the audit entry and the stored response commit together.
//
// A command with a handler runs code that may take long, so its key is claimed first, in a
// transaction of its own, and held with a lease (data/idempotency-store.ts). The handler runs with
// writes staged, and one transaction checks that the request still holds its key, re-reads and
// locks the row, checks it is unchanged and that availableWhen still holds (else STATE_CONFLICT),
// applies mutations and staged writes, records the audit entries and the idempotent response,
// and commits. Events the handler published are delivered after the commit; a throw anywhere
// leaves nothing behind.

import { type Actor, effectiveIdOf, isAuthenticated, requireScopes } from '../core/actor.ts';
import type { CommandHandler, ScopedDb } from './handler.ts';
import type { AuditLog } from '../data/audit.ts';
import { checkCondition, type Condition } from '../rules/conditions.ts';
import { readPath } from '../rules/expression-eval.ts';
import type { Work } from '../data/database.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import { checkBody, normalizeValue, type RefTarget, type Row, sameValue, validationError } from '../data/fields.ts';
import type { FieldType } from '../core/values.ts';
import { recordKey, type RecordKey } from '../core/ids.ts';
import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { AppEvent, EventBus } from './events.ts';
import { idempotencyScope, requestHash, runIdempotent } from '../data/idempotency.ts';
import type { Claim, IdempotencyStore, WriteTail } from '../data/idempotency-store.ts';
import { andFilters, type ConditionScope, type RowFilter } from '../rules/condition-sql.ts';

export interface CommandInputSpec {
  name: string;
  type: FieldType;
  required: boolean;
  values?: readonly string[];
  /** A Ref input's target, when the mutations tie it to Ref fields; without it, any record id. */
  ref?: RefTarget;
}

/** A mutation value as the blueprint wrote it: a literal, a reference, or the time of execution. */
export type MutationSpec =
  { literal: string | number | boolean } | { input: string } | { actor: string } | { record: string } | { now: true };

/** A relation `policy`/`availableWhen` read through `record.<name>`, loaded before they run. */
export interface IncludeSpec {
  name: string;
  entity: string;
  /** one: record[localKey] = target[foreignKey]; many: target[foreignKey] = record[localKey]. */
  kind: 'one' | 'many';
  localKey: string;
  foreignKey: string;
}

export interface CommandSpec<I = Record<string, unknown>, R = Row> {
  name: string;
  operationId: string;
  entity: string;
  scopes?: readonly string[];
  policy?: Condition;
  availableWhen?: Condition;
  input?: readonly CommandInputSpec[];
  mutations?: Readonly<Record<string, MutationSpec>>;
  includes?: readonly IncludeSpec[];
  handler?: CommandHandler<I, R>;
}

export interface CommandRuntime {
  stores: ReadonlyMap<string, EntityStore>;
  audit: AuditLog;
  idempotency: IdempotencyStore;
  events: EventBus;
  services: Readonly<Record<string, unknown>>;
  reportEventFailure(err: unknown, event: AppEvent): void;
}

export interface CommandCall extends RequestContext {
  recordId: string;
  input: unknown;
}

export interface CommandResult {
  status: number;
  body: unknown;
  replayed: boolean;
}

/** The commands by name, as workflow steps name them. */
export function commandsByName(commands: ReadonlyArray<CommandSpec<never, never>>): Map<string, CommandSpec> {
  return new Map(commands.map((c) => [c.name, c as unknown as CommandSpec]));
}

/** Generic so generated code passes typed specs; inside, records are plain rows. */
export async function executeCommand<I, R>(
  rt: CommandRuntime,
  typedSpec: CommandSpec<I, R>,
  call: CommandCall,
): Promise<CommandResult> {
  const spec = typedSpec as unknown as CommandSpec;
  const { actor, trace } = call;
  const input = admitCommand(spec, actor, call.input);
  if (!spec.handler) return runDeclarative(rt, spec, call, input);

  const key = call.idempotencyKey;
  let claim: Claim | undefined;
  if (key !== undefined) {
    const outcome = await rt.idempotency.begin(
      trace,
      idempotencyScope(actor),
      `command:${spec.operationId}`,
      key,
      requestHash({ recordId: call.recordId, input }),
    );
    if (outcome.kind === 'replay') return { status: outcome.status, body: outcome.body, replayed: true };
    claim = outcome.claim;
  }
  try {
    const result = await run(rt, spec, call, input, claim);
    return { ...result, replayed: false };
  } catch (err) {
    // Stored and replayed like a success, or the key freed, as the error's `retryable` says.
    if (claim) await rt.idempotency.fail(trace, claim, err);
    throw err;
  } finally {
    claim?.end();
  }
}

/** The checks before any work: an authenticated actor (401), an API key's scopes (403), the input (400). */
export function admitCommand(spec: CommandSpec, actor: Actor, rawInput: unknown): Record<string, unknown> {
  if (!isAuthenticated(actor)) throw new AppError('UNAUTHENTICATED', 'sign in or present an API key to run commands');
  requireScopes(actor, spec.scopes ?? [], spec.operationId);
  return checkInput(spec, rawInput);
}

/**
 * Whether `actor` may run `spec` on `record` (as stored, not as shown) now: its scopes, policy and
 * availableWhen, with the relations they read. What a detail page offers; the executor decides
 * again, on the locked record, when the command is sent. Conditions on the input are judged then.
 */
export function* commandOffered(rt: CommandRuntime, spec: CommandSpec, actor: Actor, record: Row): Work<boolean> {
  if (!isAuthenticated(actor)) return false;
  try {
    requireScopes(actor, spec.scopes ?? [], spec.operationId);
    const now = new Date().toISOString();
    checkConditions(rt, spec, { actor, record: yield* withRelations(rt, spec, record), input: {}, now });
    return true;
  } catch (err) {
    if (err instanceof AppError) return false;
    throw err;
  }
}

/**
 * A command without a handler as a unit of work (input admitted by admitCommand): the record read
 * and locked (PostgreSQL's FOR UPDATE), policy and availableWhen, the mutations and the audit
 * entry. Returns the record as the actor sees it. Workflow steps run it inside their transaction;
 * `tail`: nothing follows it in its unit but its key's record (runIdempotent), answered 200.
 */
export function* declarativeCommand(
  rt: CommandRuntime,
  spec: CommandSpec,
  call: CommandCall,
  input: Record<string, unknown>,
  tail?: WriteTail,
): Work<Row> {
  if (spec.handler) throw new Error(`${spec.name} has a handler: it runs through executeCommand`);
  const { actor } = call;
  const store = rt.stores.get(spec.entity) as EntityStore;
  const now = new Date().toISOString();
  const command = { name: spec.name, entity: spec.entity };
  const operation = `command:${spec.name}`;
  const detail = { command: spec.name, input };
  if (!spec.includes?.length && !readsRecord(spec)) {
    // The mutations are known without the record: they travel with its lock, and policy and
    // availableWhen are checked on the record as locked (a refusal rolls them back).
    const changes = resolveMutations(spec, input, actor, {}, now);
    const check = (record: Row) => checkConditions(rt, spec, { actor, record, input, now });
    const checkInSql = tail && store.db.returningOld ? conditionsInSql(store, spec, actor, { input, now }) : undefined;
    const how = { operation, check, command, detail, checkInSql, tail };
    const after = yield* store.lockAndChange(call, call.recordId, changes, how);
    if (after) return store.present(call, { ...after });
  }
  // Locked until the commit: of commands racing on one record, from any number of app instances,
  // each decides on the record as the one before it left it.
  const current = yield* store.load(call, call.recordId, store.access.filter(actor, 'read'), { lock: true });
  checkConditions(rt, spec, { actor, record: yield* withRelations(rt, spec, current), input, now });
  const changes = resolveMutations(spec, input, actor, current, now);
  const plan = store.planUpdate(call, current, changes, { command, checkFieldRules: false });
  const after = yield* store.applyUpdate(call, plan, operation, detail);
  return store.present(call, { ...after });
}

/**
 * policy and availableWhen as SQL: the records on which checkConditions passes, for the same
 * input and time. Undefined when either cannot be written as SQL.
 */
function conditionsInSql(store: EntityStore, spec: CommandSpec, actor: Actor, scope: ConditionScope) {
  const filters: RowFilter[] = [];
  for (const condition of [spec.policy, spec.availableWhen]) {
    if (!condition) continue;
    const filter = store.access.commandFilter(condition, actor, scope);
    if (filter === undefined) return undefined;
    filters.push(filter);
  }
  return andFilters(filters);
}

/** Whether a mutation of the command copies a value of the record (`record.<field>`). */
function readsRecord(spec: CommandSpec): boolean {
  return Object.values(spec.mutations ?? {}).some((m) => 'record' in m);
}

/** A command without a handler: checks, mutations, audit entry and stored response in one transaction. */
async function runDeclarative(
  rt: CommandRuntime,
  spec: CommandSpec,
  call: CommandCall,
  input: Record<string, unknown>,
): Promise<CommandResult> {
  // Commands need an authenticated actor (admitCommand): the access pre-check has nothing to add.
  const operation = `command:${spec.operationId}`;
  const request = { recordId: call.recordId, input };
  const result = await runIdempotent(rt.idempotency, call, operation, request, noop, function* (tail) {
    return { status: 200, body: yield* declarativeCommand(rt, spec, call, input, tail) };
  });
  return { status: result.status, body: result.body, replayed: result.replayed };
}

/**
 * policy (403 FORBIDDEN), then availableWhen (409 COMMAND_UNAVAILABLE), on the record as loaded
 * with its relations; first, neither may compare a field the actor may not read, of the record or
 * of a related one (403 FIELD_READ_DENIED): their answer would tell how its value compares.
 */
function checkConditions(
  rt: CommandRuntime,
  spec: CommandSpec,
  scope: { actor: Actor; record: Row; input: Record<string, unknown>; now: string },
): void {
  const conditions = [spec.policy, spec.availableWhen];
  (rt.stores.get(spec.entity) as EntityStore).access.checkConditionReads(scope.actor, conditions, scope.record);
  for (const inc of spec.includes ?? []) {
    const related = scope.record[inc.name];
    const rows = (Array.isArray(related) ? related : related ? [related] : []) as Row[];
    rt.stores.get(inc.entity)?.access.checkRelationReads(scope.actor, conditions, inc.name, rows);
  }
  if (spec.policy && !checkCondition(spec.policy, scope)) {
    throw new AppError('FORBIDDEN', `you may not run ${spec.name} on this record`);
  }
  if (spec.availableWhen && !checkCondition(spec.availableWhen, scope)) {
    throw new AppError('COMMAND_UNAVAILABLE', `${spec.name} is not available for this record in its current state`);
  }
}

function noop(): void {}

async function run(
  rt: CommandRuntime,
  spec: CommandSpec,
  call: CommandCall,
  input: Record<string, unknown>,
  claim: Claim | undefined,
): Promise<{ status: number; body: unknown }> {
  const { actor, trace } = call;
  const store = rt.stores.get(spec.entity) as EntityStore;
  const { db } = store;
  const { loaded, record } = await db.read(
    (function* () {
      const loaded = yield* store.load(call, call.recordId, store.access.filter(actor, 'read'));
      return { loaded, record: yield* withRelations(rt, spec, loaded) };
    })(),
    trace,
  );
  const now = new Date().toISOString();
  checkConditions(rt, spec, { actor, record, input, now });

  const changes = resolveMutations(spec, input, actor, loaded, now);
  const staged: Array<() => Work<unknown>> = [];
  const auditEntries: Array<{ action: string; detail?: Record<string, unknown> }> = [];
  const events: AppEvent[] = [];
  let open = true;
  const guard = () => {
    if (!open) throw new Error(`${spec.name}: handler ports used after the handler returned`);
  };

  if (spec.handler) {
    const db = scopedDb(rt, spec, call, { loaded, changes }, staged, guard);
    const returned = await spec.handler({
      actor,
      input,
      record,
      db,
      services: rt.services,
      audit: {
        record: (entry) => (guard(), auditEntries.push({ action: String(entry.action), detail: entry.detail })),
      },
      events: {
        publish: (name, payload) => (
          guard(),
          events.push({ name, payload, source: { command: spec.name, traceId: trace?.traceId } })
        ),
      },
      correlation: { traceId: trace?.traceId, idempotencyKey: call.idempotencyKey, agentRunId: call.agentRunId },
    });
    // Returned changes are checked like a request body (no prototype keys) before they merge.
    if (returned) Object.assign(changes, checkBody(returned));
  }
  open = false;

  const command = { name: spec.name, entity: spec.entity };
  const operation = `command:${spec.name}`;
  const detail = { command: spec.name, input };
  const changedMeanwhile = () =>
    new AppError('STATE_CONFLICT', `the ${spec.entity} changed while ${spec.name} ran; refresh it and decide again`);
  /** availableWhen on the record as locked (with its relations): it may have stopped holding. */
  const stillAvailable = (record: Row) => {
    if (spec.availableWhen && !checkCondition(spec.availableWhen, { actor, record, input, now }))
      throw new AppError('STATE_CONFLICT', `${spec.name} is no longer available for this record`);
  };
  const body = await db.write(function* () {
    let after: Row | undefined;
    if (!spec.includes?.length) {
      // The key's hold, the row's lock and the change planned from the record the handler saw go
      // in one trip; the checks then run on the row as locked, a refusal rolling it all back.
      after = yield* store.lockAndChange(call, call.recordId, changes, {
        operation,
        command,
        detail,
        first: claim && rt.idempotency.hold(claim),
        reread: { missing: changedMeanwhile },
        check: (current) => {
          if (!sameRecord(current, loaded)) throw changedMeanwhile();
          stillAvailable(current);
        },
      });
    }
    if (!after) {
      // First: a request whose key another took over commits nothing, and hears that (409).
      if (claim) yield* rt.idempotency.confirm(claim);
      // Held until the commit (PostgreSQL's FOR UPDATE): of commands racing on one record, from
      // any number of app instances, the first to commit changes it and the others see the change.
      const current = yield* store.fetch(call.recordId, { lock: true });
      if (!current || !sameRecord(current, loaded)) throw changedMeanwhile();
      stillAvailable(yield* withRelations(rt, spec, current));
      const plan = store.planUpdate(call, current, changes, { command, checkFieldRules: false });
      after = yield* store.applyUpdate(call, plan, operation, detail);
    }
    for (const apply of staged) yield* apply();
    for (const entry of auditEntries) {
      yield* rt.audit.record({
        actor,
        operation: `command:${spec.name}:${entry.action}`,
        entity: spec.entity,
        recordId: call.recordId,
        changes: {},
        detail: entry.detail,
        traceId: trace?.traceId,
        agentRunId: call.agentRunId,
        idempotencyKey: call.idempotencyKey,
      });
    }
    const presented = store.present(call, { ...after });
    if (claim) yield* rt.idempotency.finish(claim, { status: 200, body: presented });
    return presented;
  }, trace);
  rt.events.deliver(events, rt.reportEventFailure);
  return { status: 200, body };
}

function checkInput(spec: CommandSpec, raw: unknown): Record<string, unknown> {
  const body = raw === undefined ? {} : raw;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw validationError([{ code: 'NOT_AN_OBJECT', message: 'the body must be a JSON object of the command input' }]);
  }
  const issues: ErrorDetail[] = [];
  const out: Record<string, unknown> = {};
  const declared = new Map((spec.input ?? []).map((i) => [i.name, i]));
  for (const key of Object.keys(body)) {
    if (!declared.has(key))
      issues.push({ field: key, code: 'UNKNOWN_FIELD', message: `${spec.name} has no input "${key}"` });
  }
  for (const field of spec.input ?? []) {
    const value = (body as Record<string, unknown>)[field.name];
    if (!Object.prototype.hasOwnProperty.call(body, field.name) || value === null || value === undefined) {
      if (field.required) issues.push({ field: field.name, code: 'REQUIRED', message: `${field.name} is required` });
      continue;
    }
    out[field.name] = normalizeValue(field, value, issues);
  }
  if (issues.length) throw validationError(issues);
  return out;
}

/** An unset optional input leaves its field unchanged: its mutation is skipped. */
function resolveMutations(
  spec: CommandSpec,
  input: Record<string, unknown>,
  actor: Actor,
  record: Row,
  now: string,
): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [field, m] of Object.entries(spec.mutations ?? {})) {
    if ('literal' in m) changes[field] = m.literal;
    else if ('now' in m) changes[field] = now;
    else if ('input' in m) {
      if (Object.prototype.hasOwnProperty.call(input, m.input)) changes[field] = input[m.input];
    } else if ('actor' in m) changes[field] = actorValue(actor, m.actor) ?? null;
    else changes[field] = record[m.record] ?? null;
  }
  return changes;
}

/**
 * `actor.<key>` of a mutation: `role` is the first role, `effectiveId` is delegatedBy ?? id (as in
 * Zebric's executor), `metadata.<k>` a key of the actor's metadata; own properties only.
 */
function actorValue(actor: Actor, key: string): unknown {
  if (key === 'role') return actor.role ?? actor.roles[0];
  if (key === 'effectiveId') return effectiveIdOf(actor);
  return readPath(actor, key.split('.'));
}

function* withRelations(rt: CommandRuntime, spec: CommandSpec, record: Row): Work<Row> {
  if (!spec.includes?.length) return record;
  const out: Row = { ...record };
  for (const inc of spec.includes ?? []) {
    const target = rt.stores.get(inc.entity);
    if (!target) continue;
    if (inc.kind === 'one') {
      const key = record[inc.localKey];
      out[inc.name] =
        key === null || key === undefined ? null : ((yield* target.fetchWhere(inc.foreignKey, key, 1))[0] ?? null);
    } else {
      out[inc.name] = yield* target.fetchWhere(inc.foreignKey, record[inc.localKey], 1000);
    }
  }
  return out;
}

function scopedDb(
  rt: CommandRuntime,
  spec: CommandSpec,
  call: CommandCall,
  own: { loaded: Row; changes: Record<string, unknown> },
  staged: Array<() => Work<unknown>>,
  guard: () => void,
): ScopedDb {
  const ownChanges = own.changes;
  const storeOf = (entity: string): EntityStore => {
    const store = rt.stores.get(entity);
    if (!store) throw new AppError('INTERNAL_ERROR', `no entity named ${entity}`);
    return store;
  };
  const command = { name: spec.name, entity: spec.entity };
  // What the handler itself wrote to the command's own record (ownChanges also holds mutations).
  const handlerWrites: Record<string, unknown> = {};
  return {
    async get(entity, id) {
      guard();
      const store = storeOf(entity);
      return store.db.read(store.get(call, id), call.trace);
    },
    async list(entity, page = {}) {
      guard();
      const store = storeOf(entity);
      const q = { limit: Math.min(page.limit ?? 100, 1000), offset: page.offset ?? 0 };
      return (await store.db.read(store.list(call, q), call.trace)).items;
    },
    async update(entity, id, changes) {
      guard();
      const store = storeOf(entity);
      if (entity === spec.entity && sameKey(store, id, call.recordId)) {
        // The command's own record: the entity's update rule and field rules apply as to any
        // actor-scoped write; the change merges with the mutations and is written at commit. It
        // is checked on the record as the command loaded it: the commit refuses (STATE_CONFLICT)
        // should the record have changed since.
        const current = own.loaded;
        store.access.check(call.actor, 'update', current);
        store.access.checkFieldWrites(call.actor, Object.keys(checkBody(changes)), current);
        // The row rules hold for the record as the handler's writes leave it (mutations aside:
        // `policy` governs those).
        const writes = { ...handlerWrites, ...changes };
        store.checkRowRules(call, store.planUpdate(call, current, writes, { command, checkFieldRules: false }));
        Object.assign(handlerWrites, changes);
        Object.assign(ownChanges, changes);
        return { ...current, ...ownChanges };
      }
      const current = await store.db.read(store.load(call, id, store.access.filter(call.actor, 'read')), call.trace);
      store.access.check(call.actor, 'update', current);
      const plan = store.planUpdate(call, current, changes, { command, checkFieldRules: true });
      store.checkRowRules(call, plan);
      staged.push(function* () {
        const now = yield* store.fetch(id, { lock: true });
        if (!now || !sameRecord(now, current))
          throw new AppError('STATE_CONFLICT', `the ${entity} ${id} changed while ${spec.name} ran`);
        yield* store.applyUpdate(call, plan, `command:${spec.name}`);
      });
      return { ...current, ...changes };
    },
    async create(entity, data) {
      guard();
      const store = storeOf(entity);
      checkBody(data);
      staged.push(() => store.create(call, data));
    },
    async delete(entity, id) {
      guard();
      const store = storeOf(entity);
      await store.db.read(store.load(call, id, store.access.filter(call.actor, 'read')), call.trace);
      staged.push(() => store.delete(call, id));
    },
  };
}

/** Whether two ids name one record of `store` (a handler may pass an Integer id as a number). */
function sameKey(store: EntityStore, a: RecordKey, b: RecordKey): boolean {
  const key = recordKey(store.spec.idType, a);
  return key !== undefined && key === recordKey(store.spec.idType, b);
}

function sameRecord(a: Row, b: Row): boolean {
  return Object.keys(b).every((k) => sameValue(a[k], b[k]));
}
