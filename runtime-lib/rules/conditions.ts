/**
 * Access conditions as written in blueprints (entity and field `access`,
 * command `policy` and `availableWhen`).
 *
 * Shared by the generator (validation) and generated apps (parsing their rules
 * at load, checks at request time), so it depends only on the expression modules. Every check fails closed: an
 * anonymous request never satisfies a condition that mentions the current user,
 * and a missing value never matches anything.
 */

import { readOwnProperty, readPath, evaluate } from './expression-eval.ts';
import { type Expr, EXPRESSION_ROOTS, isForbiddenKey, parseExpression, pathsOf } from './expression-parse.ts';

export type Operand =
  | { kind: 'actor'; key: string }
  | { kind: 'record'; keys: string[] }
  | { kind: 'literal'; value: string | number | boolean | null };

export type Condition =
  | { kind: 'const'; value: boolean }
  | { kind: 'public' }
  | { kind: 'authenticated' }
  | { kind: 'owner' }
  | { kind: 'match'; pairs: Array<{ left: Operand; right: Operand }> }
  | { kind: 'and' | 'or'; items: Condition[] }
  | { kind: 'expr'; expr: Expr; source: string };

export interface ConditionIssue {
  keys: (string | number)[];
  message: string;
}

export type ConditionParseResult = { ok: true; condition: Condition } | { ok: false; issues: ConditionIssue[] };

/**
 * Any actor object; other keys are read as own properties for `$currentUser.<key>`.
 * Kept free of an index signature so that interface types such as Actor fit.
 */
export interface ConditionActor {
  readonly id: string;
  readonly roles: readonly string[];
}

export interface ConditionContext {
  /** null for an anonymous request; an actor of kind "anonymous" is treated the same. */
  actor: ConditionActor | null;
  record?: Record<string, unknown> | null;
  input?: unknown;
  workflow?: unknown;
  now?: unknown;
}

const CURRENT_USER_PREFIX = '$currentUser.';

/** Guards against self-referencing values; blueprint conditions are never this deep. */
const MAX_CONDITION_DEPTH = 64;

const SHORTHANDS: Readonly<Record<string, Condition>> = {
  public: { kind: 'public' },
  authenticated: { kind: 'authenticated' },
  owner: { kind: 'owner' },
};

const CONDITION_FORMS = 'true/false, "public", "authenticated", "owner", an expression string, or a table';

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date';
  switch (typeof value) {
    case 'object':
      return 'a table';
    case 'number':
      return 'a number';
    case 'undefined':
      return 'nothing';
    default:
      return `a ${typeof value}`;
  }
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

class ConditionParser {
  readonly issues: ConditionIssue[] = [];

  constructor(private readonly allowedRoots: readonly string[]) {}

  private report(keys: (string | number)[], message: string): void {
    this.issues.push({ keys, message });
  }

  /** Returns undefined when the value has issues (already reported). */
  parse(value: unknown, keys: (string | number)[], depth: number): Condition | undefined {
    if (depth > MAX_CONDITION_DEPTH) {
      this.report(keys, `condition is nested too deeply (maximum depth ${MAX_CONDITION_DEPTH})`);
      return undefined;
    }
    if (typeof value === 'boolean') return { kind: 'const', value };
    if (typeof value === 'string') return this.parseString(value, keys);
    if (isTable(value)) return this.parseTable(value, keys, depth);
    this.report(keys, `expected a condition (${CONDITION_FORMS}), got ${describeValue(value)}`);
    return undefined;
  }

  private parseString(source: string, keys: (string | number)[]): Condition | undefined {
    if (Object.hasOwn(SHORTHANDS, source)) return SHORTHANDS[source];
    const parsed = parseExpression(source, this.allowedRoots);
    if (parsed.ok) return { kind: 'expr', expr: parsed.expr, source };
    this.report(keys, `expression does not parse: ${parsed.error.message} at column ${parsed.error.offset + 1}`);
    return undefined;
  }

  private parseTable(table: Record<string, unknown>, keys: (string | number)[], depth: number): Condition | undefined {
    const entries = Object.entries(table);
    if (entries.length === 0) {
      this.report(
        keys,
        'empty table is not a condition (expected path = value pairs, { or = [...] } or { and = [...] })',
      );
      return undefined;
    }
    const issueCount = this.issues.length;
    const combinators = entries.filter(([key]) => key === 'or' || key === 'and');
    const matchEntries = entries.filter(([key]) => key !== 'or' && key !== 'and');
    if (combinators.length > 0 && entries.length > 1) {
      const others = entries.map(([key]) => key).filter((key) => key !== combinators[0][0]);
      this.report(keys, `"${combinators[0][0]}" must be the only key in its table (also found: ${others.join(', ')})`);
    }
    const combined: Condition[] = [];
    for (const [key, items] of combinators) {
      const condition = this.parseCombinator(key as 'and' | 'or', items, [...keys, key], depth);
      if (condition !== undefined) combined.push(condition);
    }
    const pairs: Array<{ left: Operand; right: Operand }> = [];
    for (const [key, value] of matchEntries) {
      const pair = this.parsePair(key, value, [...keys, key]);
      if (pair !== undefined) pairs.push(pair);
    }
    if (this.issues.length > issueCount) return undefined;
    return combined.length === 1 ? combined[0] : { kind: 'match', pairs };
  }

  private parseCombinator(
    kind: 'and' | 'or',
    items: unknown,
    keys: (string | number)[],
    depth: number,
  ): Condition | undefined {
    if (!Array.isArray(items) || items.length === 0) {
      this.report(
        keys,
        `"${kind}" must be a non-empty array of conditions, ` +
          `got ${Array.isArray(items) ? 'an empty array' : describeValue(items)}`,
      );
      return undefined;
    }
    const parsed: Condition[] = [];
    items.forEach((item, index) => {
      const condition = this.parse(item, [...keys, index], depth + 1);
      if (condition !== undefined) parsed.push(condition);
    });
    return parsed.length === items.length ? { kind, items: parsed } : undefined;
  }

  private parsePair(
    key: string,
    value: unknown,
    keys: (string | number)[],
  ): { left: Operand; right: Operand } | undefined {
    const left = key.startsWith('$') ? this.parseReference(key, keys) : this.parseRecordPath(key, keys);
    const right = this.parseValue(key, value, keys);
    return left === undefined || right === undefined ? undefined : { left, right };
  }

  /** `$currentUser.<key>`; any other `$` reference is reported rather than taken literally. */
  private parseReference(text: string, keys: (string | number)[]): Operand | undefined {
    const key = text.startsWith(CURRENT_USER_PREFIX) ? text.slice(CURRENT_USER_PREFIX.length) : '';
    if (!NAME_PATTERN.test(key)) {
      this.report(keys, `unknown reference "${text}" (expected $currentUser.<key>)`);
      return undefined;
    }
    if (isForbiddenKey(key)) {
      this.report(keys, `"${key}" is not allowed in a path`);
      return undefined;
    }
    return { kind: 'actor', key };
  }

  private parseRecordPath(path: string, keys: (string | number)[]): Operand | undefined {
    const segments = path.split('.');
    if (!segments.every((segment) => NAME_PATTERN.test(segment))) {
      this.report(
        keys,
        `invalid field path "${path}" (expected a field name, dotted through relations like customer.id)`,
      );
      return undefined;
    }
    const forbidden = segments.find(isForbiddenKey);
    if (forbidden !== undefined) {
      this.report(keys, `"${forbidden}" is not allowed in a path`);
      return undefined;
    }
    return { kind: 'record', keys: segments };
  }

  private parseValue(key: string, value: unknown, keys: (string | number)[]): Operand | undefined {
    if (typeof value === 'string')
      return value.startsWith('$') ? this.parseReference(value, keys) : { kind: 'literal', value };
    if (typeof value === 'number' || typeof value === 'boolean') return { kind: 'literal', value };
    // An unquoted dotted TOML key (customer.id = ...) arrives as a nested table.
    const hint = isTable(value) ? ` (quote dotted paths: "${key}.<field>" = ...)` : '';
    this.report(keys, `value of "${key}" must be a string, number or boolean, got ${describeValue(value)}${hint}`);
    return undefined;
  }
}

/** Validates a blueprint condition value, reporting every problem found. */
export function parseCondition(
  value: unknown,
  options: { allowedRoots?: readonly string[] } = {},
): ConditionParseResult {
  const parser = new ConditionParser(options.allowedRoots ?? EXPRESSION_ROOTS);
  const condition = parser.parse(value, [], 0);
  if (condition === undefined || parser.issues.length > 0) return { ok: false, issues: parser.issues };
  return { ok: true, condition };
}

/** A condition as a blueprint writes it: true/false, a shorthand, an expression or a table. */
export type ConditionSource = boolean | string | Readonly<Record<string, unknown>>;

/**
 * The condition a generated module writes as its blueprint source, parsed when the module loads
 * (once per rule, never per request). The generator validated every source, so this throws only
 * when a generated file was edited into an invalid rule: the app then refuses to start, naming
 * the rule, instead of running with a check that cannot pass.
 */
export function rule(source: ConditionSource): Condition {
  const parsed = parseCondition(source);
  if (parsed.ok) return parsed.condition;
  const problems = parsed.issues.map((i) => (i.keys.length ? `${i.keys.join('.')}: ${i.message}` : i.message));
  throw new Error(`the rule ${JSON.stringify(source)} does not parse: ${problems.join('; ')}`);
}

// ---------------------------------------------------------------------------
// Checking

type Actor = ConditionActor;

// The anonymous placeholder actor must never count as authenticated, whichever way a caller passes it.
function actorOf(ctx: ConditionContext): Actor | null {
  const actor = ctx.actor;
  if (typeof actor !== 'object' || actor === null) return null;
  return readOwnProperty(actor, 'kind') === 'anonymous' ? null : actor;
}

function actorRoles(actor: Actor): unknown[] {
  const roles = readOwnProperty(actor, 'roles');
  return Array.isArray(roles) ? roles : [];
}

/** delegatedBy ?? id: whom the work is for, what ownership compares (Zebric's effectiveId). */
export function effectiveActorId(actor: Actor): unknown {
  return readOwnProperty(actor, 'effectiveId') ?? readOwnProperty(actor, 'delegatedBy') ?? readOwnProperty(actor, 'id');
}

/**
 * `$currentUser.<key>`, as Zebric reads it: `id` is the effective id; `role` the actor's own
 * `role` if set, else its first role; any other key the actor's own, else its metadata's (a
 * person's e-mail, name or a field of their User record).
 */
export function readActorKey(actor: Actor, key: string): unknown {
  if (key === 'id') return effectiveActorId(actor);
  if (key === 'role') return readOwnProperty(actor, 'role') ?? actorRoles(actor)[0];
  return readOwnProperty(actor, key) ?? readOwnProperty(readOwnProperty(actor, 'metadata'), key);
}

/**
 * `$currentUser.role = "admin"` holds when the actor's `role` is "admin" or
 * when "admin" is among its `roles`: people hold several roles, and a condition
 * naming one of them must not depend on which one happens to be listed first.
 */
export function currentUserRoleMatches(actor: Actor, value: unknown): boolean {
  if (value === undefined || value === null) return false;
  return readActorKey(actor, 'role') === value || actorRoles(actor).some((role) => role === value);
}

/**
 * Strict equality where missing values never match (so a record lacking a
 * field cannot satisfy `field = "$currentUser.someMissingKey"`); a list value,
 * such as a path through a to-many relation or `$currentUser.roles`, matches
 * when it contains the other side.
 */
function valuesMatch(a: unknown, b: unknown): boolean {
  if (a === undefined || a === null || b === undefined || b === null) return false;
  if (Array.isArray(a) && !Array.isArray(b)) return a.some((element) => element === b);
  if (Array.isArray(b) && !Array.isArray(a)) return b.some((element) => element === a);
  return a === b;
}

function resolveOperand(operand: Operand, actor: Actor | null, record: unknown): unknown {
  switch (operand.kind) {
    case 'actor':
      return actor === null ? undefined : readActorKey(actor, operand.key);
    case 'record':
      return readPath(record, operand.keys);
    case 'literal':
      return operand.value;
  }
}

function isCurrentUserRole(operand: Operand): boolean {
  return operand.kind === 'actor' && operand.key === 'role';
}

function pairMatches(left: Operand, right: Operand, actor: Actor | null, record: unknown): boolean {
  if (actor === null) {
    if (left.kind === 'actor' || right.kind === 'actor') return false;
  } else if (isCurrentUserRole(left)) {
    return currentUserRoleMatches(actor, resolveOperand(right, actor, record));
  } else if (isCurrentUserRole(right)) {
    return currentUserRoleMatches(actor, resolveOperand(left, actor, record));
  }
  return valuesMatch(resolveOperand(left, actor, record), resolveOperand(right, actor, record));
}

function check(condition: Condition, ctx: ConditionContext): boolean {
  const actor = actorOf(ctx);
  switch (condition.kind) {
    case 'const':
      return condition.value === true;
    case 'public':
      return true;
    case 'authenticated':
      return actor !== null;
    case 'owner': {
      // The record's owner field is the actor's effective id, as `{ userId = "$currentUser.id" }`.
      if (actor === null) return false;
      const actorId = effectiveActorId(actor);
      const field = ownerField((name) => isTable(ctx.record) && Object.hasOwn(ctx.record, name));
      return actorId !== undefined && actorId !== null && readOwnProperty(ctx.record, field) === actorId;
    }
    case 'match':
      return condition.pairs.every(({ left, right }) => pairMatches(left, right, actor, ctx.record));
    case 'and':
      return condition.items.every((item) => check(item, ctx));
    case 'or':
      return condition.items.some((item) => check(item, ctx));
    case 'expr': {
      if (actor === null && readsFrom(condition, 'actor')) return false;
      const context = {
        actor: actor ?? undefined,
        record: ctx.record ?? undefined,
        input: ctx.input,
        workflow: ctx.workflow,
        now: ctx.now,
      };
      return evaluate(condition.expr, context) === true;
    }
    default:
      return false;
  }
}

/**
 * The field the shorthand "owner" compares with the actor's effective id: `userId`, as in Zebric
 * 0.6, or `ownerId` on a record that has no `userId` (bp's own blueprints).
 */
export function ownerField(has: (name: string) => boolean): 'userId' | 'ownerId' {
  return has('userId') ? 'userId' : 'ownerId';
}

/** Never throws: a condition that cannot be checked denies. */
export function checkCondition(condition: Condition, ctx: ConditionContext): boolean {
  try {
    return check(condition, ctx);
  } catch {
    return false;
  }
}

/** `source` is both the operand kind and the expression root that read it. */
function readsFrom(condition: Condition, source: 'actor' | 'record'): boolean {
  switch (condition.kind) {
    case 'match':
      return condition.pairs.some(({ left, right }) => left.kind === source || right.kind === source);
    case 'and':
    case 'or':
      return condition.items.some((item) => readsFrom(item, source));
    case 'expr':
      return pathsOf(condition.expr).some((path) => path.root === source);
    case 'owner':
      return true;
    case 'authenticated':
      return source === 'actor';
    case 'const':
    case 'public':
      return false;
  }
}

/** Whether any part reads the current user (so an anonymous request fails it). */
export function conditionReadsActor(condition: Condition): boolean {
  return readsFrom(condition, 'actor');
}

/** Whether any part reads the record (so it needs the record loaded, with relations). */
export function conditionReadsRecord(condition: Condition): boolean {
  return readsFrom(condition, 'record');
}
