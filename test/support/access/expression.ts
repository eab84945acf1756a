// The oracle's own reading of the blueprint expression language (format contract, "Expressions"),
// written from the contract and independent of runtime-lib/rules: the access matrix checks the
// generated app's evaluator against this one, so the two must not share code.
//
// Evaluation is three-valued: the record may be UNKNOWN ("whatever the record"), and a result
// that depends on it is UNKNOWN too. Anything the contract leaves open (ordering or arithmetic on
// mixed types, relation paths over a flat row, the `input` / `workflow` / `now` roots, actor keys
// the oracle does not model) throws OracleUnsupported instead of guessing, so a new rule shape
// can never be misjudged silently.

export class OracleUnsupported extends Error {
  constructor(message: string) {
    super(`access oracle: ${message}`);
  }
}

export const UNKNOWN: unique symbol = Symbol('unknown record');
export type Unknown = typeof UNKNOWN;

export const ROOTS = ['actor', 'record', 'input', 'workflow', 'now'] as const;
export type Root = (typeof ROOTS)[number];

/** Operators by binding strength, loosest first (the contract's list); all left-associative. */
const LEVELS = [
  ['||'],
  ['&&'],
  ['==', '!=', 'contains', 'in'],
  ['>', '>=', '<', '<='],
  ['+', '-'],
  ['*', '/', '%'],
] as const;
type Op = (typeof LEVELS)[number][number];

export type Expr =
  | { kind: 'value'; value: string | number | boolean | null }
  | { kind: 'list'; items: Expr[] }
  | { kind: 'path'; root: Root; keys: string[] }
  | { kind: 'not' | 'negate'; operand: Expr }
  | { kind: 'op'; op: Op; left: Expr; right: Expr };

// ---------------------------------------------------------------------------------------------
// Tokens

type Token = {
  type: 'number' | 'string' | 'name' | 'symbol' | 'end';
  text: string;
  value?: string | number;
  at: number;
};

// Two-character symbols first, so that `>=` is not read as `>` then `=`.
const SYMBOLS = [
  '||',
  '&&',
  '==',
  '!=',
  '>=',
  '<=',
  '>',
  '<',
  '+',
  '-',
  '*',
  '/',
  '%',
  '!',
  '(',
  ')',
  '[',
  ']',
  ',',
  '.',
];

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fail = (what: string): never => {
    throw new OracleUnsupported(`${what} at column ${i + 1} of "${source}"`);
  };
  while (i < source.length) {
    const rest = source.slice(i);
    const space = /^\s+/.exec(rest);
    if (space) {
      i += space[0].length;
      continue;
    }
    const number = /^\d+(\.\d+)?/.exec(rest);
    if (number) {
      if (/^[A-Za-z_.]/.test(source.slice(i + number[0].length))) fail('malformed number');
      tokens.push({ type: 'number', text: number[0], value: Number(number[0]), at: i });
      i += number[0].length;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
    if (name) {
      tokens.push({ type: 'name', text: name[0], at: i });
      i += name[0].length;
      continue;
    }
    if (rest[0] === "'" || rest[0] === '"') {
      const quote = rest[0];
      let text = '';
      let j = i + 1;
      for (; j < source.length && source[j] !== quote; j++) {
        if (source[j] === '\\') {
          // Only escapes of the quote and the backslash: others are left to the contract's owner.
          if (source[j + 1] !== quote && source[j + 1] !== '\\') fail('unsupported escape in a string');
          j++;
        }
        text += source[j];
      }
      if (j >= source.length) fail('unterminated string');
      tokens.push({ type: 'string', text: source.slice(i, j + 1), value: text, at: i });
      i = j + 1;
      continue;
    }
    const symbol = SYMBOLS.find((s) => rest.startsWith(s));
    if (!symbol) fail(`unexpected "${rest[0]}"`);
    tokens.push({ type: 'symbol', text: symbol!, at: i });
    i += symbol!.length;
  }
  tokens.push({ type: 'end', text: '', at: source.length });
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// Parser (recursive descent, one function per precedence level)

const KEYWORD_OPS: readonly string[] = ['contains', 'in'];

export function parseExpression(source: string): Expr {
  const tokens = tokenize(source);
  let pos = 0;
  const peek = () => tokens[pos];
  const fail = (what: string): never => {
    throw new OracleUnsupported(`${what} at column ${peek().at + 1} of "${source}"`);
  };
  const take = (text: string) => {
    if (peek().type !== 'symbol' || peek().text !== text) fail(`expected "${text}"`);
    pos++;
  };
  const isSymbol = (text: string) => peek().type === 'symbol' && peek().text === text;
  /** The binary operator at the cursor, if it is one of `ops`. */
  const operator = (ops: readonly string[]): Op | undefined => {
    const t = peek();
    const named = t.type === 'name' && KEYWORD_OPS.includes(t.text);
    return (t.type === 'symbol' || named) && ops.includes(t.text) ? (t.text as Op) : undefined;
  };

  const binary = (level: number): Expr => {
    if (level === LEVELS.length) return unary();
    let left = binary(level + 1);
    for (let op = operator(LEVELS[level]); op; op = operator(LEVELS[level])) {
      pos++;
      left = { kind: 'op', op, left, right: binary(level + 1) };
    }
    return left;
  };

  const unary = (): Expr => {
    if (isSymbol('!') || isSymbol('-')) {
      const kind = peek().text === '!' ? 'not' : 'negate';
      pos++;
      return { kind, operand: unary() };
    }
    return primary();
  };

  const primary = (): Expr => {
    const t = peek();
    if (t.type === 'number' || t.type === 'string') {
      pos++;
      return { kind: 'value', value: t.value! };
    }
    if (isSymbol('(')) {
      pos++;
      const inner = binary(0);
      take(')');
      return inner;
    }
    if (isSymbol('[')) {
      pos++;
      const items: Expr[] = [];
      while (!isSymbol(']')) {
        if (items.length) take(',');
        items.push(binary(0));
      }
      pos++;
      return { kind: 'list', items };
    }
    if (t.type === 'name') {
      pos++;
      if (t.text === 'true' || t.text === 'false') return { kind: 'value', value: t.text === 'true' };
      if (t.text === 'null') return { kind: 'value', value: null };
      if (!(ROOTS as readonly string[]).includes(t.text)) {
        pos--;
        fail(`"${t.text}" is not a root (${ROOTS.join(', ')})`);
      }
      const keys: string[] = [];
      while (isSymbol('.')) {
        pos++;
        if (peek().type !== 'name') fail('expected a name after "."');
        keys.push(peek().text);
        pos++;
      }
      return { kind: 'path', root: t.text as Root, keys };
    }
    return fail(t.type === 'end' ? 'unexpected end' : `unexpected "${t.text}"`);
  };

  const expr = binary(0);
  if (peek().type !== 'end') fail(`unexpected "${peek().text}"`);
  return expr;
}

/** Every path in an expression. */
export function pathsIn(expr: Expr): Array<{ root: Root; keys: string[] }> {
  switch (expr.kind) {
    case 'path':
      return [expr];
    case 'list':
      return expr.items.flatMap(pathsIn);
    case 'not':
    case 'negate':
      return pathsIn(expr.operand);
    case 'op':
      return [...pathsIn(expr.left), ...pathsIn(expr.right)];
    case 'value':
      return [];
  }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/**
 * Actor keys the oracle knows the value of (the matrix's actors carry exactly these): bp's, and
 * Zebric's `type`, `effectiveId` and `metadata`.
 */
export const ACTOR_KEYS: readonly string[] = [
  'id',
  'kind',
  'roles',
  'role',
  'email',
  'type',
  'effectiveId',
  'metadata',
];

export interface Scope {
  /** undefined: no authenticated actor. */
  actor: Readonly<Record<string, unknown>> | undefined;
  /** A stored or new row (flat), or UNKNOWN: any record. */
  record: Readonly<Record<string, unknown>> | Unknown;
}

/** One step of a path: an own property (prototypes unreachable); through a list, mapped over it. */
export function step(value: unknown, key: string): unknown {
  if (Array.isArray(value)) return value.map((element) => step(element, key));
  if (typeof value !== 'object' || value === null) return undefined;
  return Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}

const missing = (v: unknown) => v === undefined || v === null;

function readPath(path: { root: Root; keys: string[] }, scope: Scope): unknown {
  if (path.root === 'actor') {
    if (path.keys.length === 0 || !ACTOR_KEYS.includes(path.keys[0])) {
      throw new OracleUnsupported(`actor.${path.keys.join('.')} is not modelled (only ${ACTOR_KEYS.join(', ')})`);
    }
    return path.keys.reduce(step, scope.actor as unknown);
  }
  if (path.root === 'record') {
    // The oracle sees flat rows: a relation path would read undefined where the app loads the relation.
    if (path.keys.length !== 1)
      throw new OracleUnsupported(`record path "${path.keys.join('.')}" (only a field of the record)`);
    return scope.record === UNKNOWN ? UNKNOWN : step(scope.record, path.keys[0]);
  }
  throw new OracleUnsupported(`the ${path.root} root has no value in an entity access rule the oracle knows`);
}

/** The value of an expression, or UNKNOWN when it depends on an unknown record. */
export function evaluate(expr: Expr, scope: Scope): unknown {
  switch (expr.kind) {
    case 'value':
      return expr.value;
    case 'list': {
      const items = expr.items.map((item) => evaluate(item, scope));
      return items.includes(UNKNOWN) ? UNKNOWN : items;
    }
    case 'path':
      return readPath(expr, scope);
    case 'not': {
      const v = evaluate(expr.operand, scope);
      return v === UNKNOWN ? UNKNOWN : v !== true;
    }
    case 'negate': {
      const v = evaluate(expr.operand, scope);
      if (v === UNKNOWN || missing(v)) return v;
      if (typeof v !== 'number') throw new OracleUnsupported(`unary minus on ${typeof v}`);
      return -v;
    }
    case 'op':
      return operate(expr.op, expr.left, expr.right, scope);
  }
}

function operate(op: Op, leftExpr: Expr, rightExpr: Expr, scope: Scope): unknown {
  const left = evaluate(leftExpr, scope);
  // Only `true` is true. A left side that decides alone is enough, as the contract's && and ||.
  if (op === '&&' && left !== UNKNOWN && left !== true) return false;
  if (op === '||' && left === true) return true;
  const right = evaluate(rightExpr, scope);
  if (op === '&&') return right === UNKNOWN ? UNKNOWN : right !== true ? false : left === UNKNOWN ? UNKNOWN : true;
  if (op === '||') return right === true ? true : left === UNKNOWN || right === UNKNOWN ? UNKNOWN : false;
  if (left === UNKNOWN || right === UNKNOWN) return UNKNOWN;
  switch (op) {
    case '==':
      return left === right;
    case '!=':
      return left !== right;
    case 'contains':
      return contains(left, right);
    case 'in':
      return contains(right, left);
    case '>':
    case '>=':
    case '<':
    case '<=':
      return order(op, left, right);
    default:
      return arithmetic(op, left, right);
  }
}

/** List membership (strict) or substring; anything else contains nothing. */
function contains(container: unknown, item: unknown): boolean {
  if (Array.isArray(container)) return container.some((element) => element === item);
  return typeof container === 'string' && typeof item === 'string' && container.includes(item);
}

function order(op: '>' | '>=' | '<' | '<=', a: unknown, b: unknown): boolean {
  // A missing value never satisfies a comparison.
  if (missing(a) || missing(b)) return false;
  const bothNumbers = typeof a === 'number' && typeof b === 'number';
  if (!bothNumbers && !(typeof a === 'string' && typeof b === 'string'))
    throw new OracleUnsupported(`${op} on ${typeof a} and ${typeof b}`);
  const [x, y] = [a as number | string, b as number | string];
  return op === '>' ? x > y : op === '>=' ? x >= y : op === '<' ? x < y : x <= y;
}

function arithmetic(op: '+' | '-' | '*' | '/' | '%', a: unknown, b: unknown): unknown {
  if (missing(a) || missing(b)) return undefined;
  if (typeof a !== 'number' || typeof b !== 'number')
    throw new OracleUnsupported(`${op} on ${typeof a} and ${typeof b}`);
  if ((op === '/' || op === '%') && b === 0) throw new OracleUnsupported(`${op} by zero`);
  return op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : op === '/' ? a / b : a % b;
}
