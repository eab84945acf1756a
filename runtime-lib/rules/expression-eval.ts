/**
 * Evaluation of parsed blueprint expressions (rules/expression-parse.ts).
 *
 * Semantics are deliberately strict so that a policy can only grant access when
 * it is unambiguously satisfied: only the boolean `true` counts as true, `==` is
 * `===`, operators on mismatched types yield `undefined` or `false` rather than
 * coercing, and property reads see own properties only so that nothing from a
 * prototype chain can leak into a decision.
 */

import { type Expr, isForbiddenKey } from './expression-parse.ts';

/**
 * Reads an own property of an object, or undefined. Arrays are not read here
 * (they are mapped over by readStep), so `.length` and indices never leak.
 */
export function readOwnProperty(target: unknown, key: string): unknown {
  if (typeof target !== 'object' || target === null || Array.isArray(target) || isForbiddenKey(key)) return undefined;
  try {
    return Object.prototype.hasOwnProperty.call(target, key) ? (target as Record<string, unknown>)[key] : undefined;
  } catch {
    // Own getters may throw; a read that fails is simply a missing value.
    return undefined;
  }
}

function readStep(value: unknown, key: string): unknown {
  if (!Array.isArray(value)) return readOwnProperty(value, key);
  try {
    return value.map((element) => readOwnProperty(element, key));
  } catch {
    return undefined;
  }
}

/**
 * Follows `keys` from `value`; a step through an array maps the remaining read
 * over its elements (`record.members.userId` is the list of member ids).
 */
export function readPath(value: unknown, keys: readonly string[]): unknown {
  let current = value;
  for (const key of keys) current = readStep(current, key);
  return current;
}

function isDate(value: unknown): value is Date {
  return value instanceof Date;
}

function isoStringOf(date: Date): string | undefined {
  try {
    return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
  } catch {
    return undefined;
  }
}

function timeOf(date: Date): number {
  try {
    return date.getTime();
  } catch {
    return Number.NaN;
  }
}

/**
 * Orderable pairs: two numbers, two strings, two Dates, or a Date and a string
 * (stored timestamps arrive as ISO strings while `now` may be a Date, and ISO
 * strings in UTC order correctly as text).
 */
function orderablePair(a: unknown, b: unknown): [number, number] | [string, string] | undefined {
  if (typeof a === 'number' && typeof b === 'number') return [a, b];
  if (typeof a === 'string' && typeof b === 'string') return [a, b];
  if (isDate(a) && isDate(b)) return [timeOf(a), timeOf(b)];
  if (isDate(a) && typeof b === 'string') {
    const iso = isoStringOf(a);
    return iso === undefined ? undefined : [iso, b];
  }
  if (typeof a === 'string' && isDate(b)) {
    const iso = isoStringOf(b);
    return iso === undefined ? undefined : [a, iso];
  }
  return undefined;
}

function compare(op: '>' | '>=' | '<' | '<=', a: unknown, b: unknown): boolean {
  const pair = orderablePair(a, b);
  if (pair === undefined) return false;
  const [x, y] = pair;
  switch (op) {
    case '>':
      return x > y;
    case '>=':
      return x >= y;
    case '<':
      return x < y;
    case '<=':
      return x <= y;
  }
}

/** List membership by strict equality, or substring when both are strings; false otherwise. */
export function containsValue(container: unknown, item: unknown): boolean {
  if (Array.isArray(container)) {
    try {
      return container.some((element) => element === item);
    } catch {
      return false;
    }
  }
  return typeof container === 'string' && typeof item === 'string' && container.includes(item);
}

function arithmetic(op: '+' | '-' | '*' | '/' | '%', a: unknown, b: unknown): number | string | undefined {
  if (op === '+' && typeof a === 'string' && typeof b === 'string') return a + b;
  if (typeof a !== 'number' || typeof b !== 'number') return undefined;
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      return b === 0 ? undefined : a / b;
    case '%':
      return b === 0 ? undefined : a % b;
  }
}

function evaluateNode(expr: Expr, context: Readonly<Record<string, unknown>>): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'array':
      return expr.items.map((item) => evaluateNode(item, context));
    case 'path':
      return readPath(readOwnProperty(context, expr.root), expr.keys);
    case 'unary': {
      const operand = evaluateNode(expr.operand, context);
      if (expr.op === '!') return operand !== true;
      return typeof operand === 'number' ? -operand : undefined;
    }
    case 'binary':
      return evaluateBinary(expr, context);
    default:
      return undefined;
  }
}

function evaluateBinary(expr: Extract<Expr, { kind: 'binary' }>, context: Readonly<Record<string, unknown>>): unknown {
  const left = evaluateNode(expr.left, context);
  switch (expr.op) {
    case '||':
      return left === true || evaluateNode(expr.right, context) === true;
    case '&&':
      return left === true && evaluateNode(expr.right, context) === true;
    default:
      break;
  }
  const right = evaluateNode(expr.right, context);
  switch (expr.op) {
    case '==':
      return left === right;
    case '!=':
      return left !== right;
    case 'contains':
      return containsValue(left, right);
    case 'in':
      return containsValue(right, left);
    case '>':
    case '>=':
    case '<':
    case '<=':
      return compare(expr.op, left, right);
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
      return arithmetic(expr.op, left, right);
  }
}

/**
 * Evaluates an expression; never throws. `context` maps root names to values,
 * and a root absent from it is undefined.
 */
export function evaluate(expr: Expr, context: Readonly<Record<string, unknown>>): unknown {
  try {
    return evaluateNode(expr, context);
  } catch {
    // Trees embedded in generated code need not come from the parser, so a
    // pathologically deep one could overflow the stack; that must not crash a request.
    return undefined;
  }
}

export function isTrue(expr: Expr, context: Readonly<Record<string, unknown>>): boolean {
  return evaluate(expr, context) === true;
}
