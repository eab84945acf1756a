/**
 * The blueprint expression language: syntax tree, tokenizer and parser.
 *
 * Shared by the generator (which validates expressions at generate time) and by
 * every generated app (which parses them at load and evaluates them at request
 * time, rules/expression-eval.ts), so it must stay dependency-free,
 * platform-neutral and free of eval/Function.
 */

import { ParseFailure, type Token, tokenize } from './expression-tokens.ts';

export type Expr =
  | { kind: 'literal'; value: string | number | boolean | null }
  | { kind: 'array'; items: Expr[] }
  | { kind: 'path'; root: string; keys: string[] }
  | { kind: 'unary'; op: '!' | '-'; operand: Expr }
  | {
      kind: 'binary';
      op: '||' | '&&' | '==' | '!=' | 'contains' | 'in' | '>' | '>=' | '<' | '<=' | '+' | '-' | '*' | '/' | '%';
      left: Expr;
      right: Expr;
    };

export type BinaryOp = Extract<Expr, { kind: 'binary' }>['op'];

export const EXPRESSION_ROOTS: readonly string[] = Object.freeze(['actor', 'record', 'input', 'workflow', 'now']);

/** Bounds parse and evaluation work for untrusted blueprint text. */
export const MAX_EXPRESSION_LENGTH = 4096;
/** Nesting of parentheses, array brackets and unary operators; keeps recursion shallow. */
export const MAX_EXPRESSION_DEPTH = 64;

export interface ParseError {
  message: string;
  offset: number;
}

export type ParseResult = { ok: true; expr: Expr } | { ok: false; error: ParseError };

const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Names that would reach a prototype; rejected in paths both when parsing and when reading. */
export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN_KEYS.has(key);
}

/** Loosest binds first; every binary operator is left-associative. */
export const BINARY_PRECEDENCE: Readonly<Record<BinaryOp, number>> = Object.freeze({
  '||': 1,
  '&&': 2,
  '==': 3,
  '!=': 3,
  contains: 3,
  in: 3,
  '>': 4,
  '>=': 4,
  '<': 4,
  '<=': 4,
  '+': 5,
  '-': 5,
  '*': 6,
  '/': 6,
  '%': 6,
});

const KEYWORD_OPERATORS: ReadonlySet<string> = new Set(['contains', 'in']);

// ---------------------------------------------------------------------------
// Parser (precedence climbing)

function describeToken(token: Token): string {
  return token.type === 'end' ? 'end of input' : `"${token.text}"`;
}

function binaryOperatorOf(token: Token): BinaryOp | undefined {
  if (token.type === 'punct' && Object.hasOwn(BINARY_PRECEDENCE, token.text)) return token.text as BinaryOp;
  if (token.type === 'name' && KEYWORD_OPERATORS.has(token.text)) return token.text as BinaryOp;
  return undefined;
}

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly allowedRoots: readonly string[],
  ) {}

  parseAll(): Expr {
    const expr = this.parseBinary(1);
    const rest = this.peek();
    if (rest.type !== 'end') throw new ParseFailure(`unexpected token ${describeToken(rest)}`, rest.offset);
    return expr;
  }

  private peek(): Token {
    const token = this.tokens[this.pos];
    if (token.type === 'error') throw token.failure;
    return token;
  }

  private next(): Token {
    const token = this.peek();
    if (token.type !== 'end') this.pos++;
    return token;
  }

  private isPunct(text: string): boolean {
    const token = this.peek();
    return token.type === 'punct' && token.text === text;
  }

  private enter(token: Token): void {
    this.depth++;
    if (this.depth > MAX_EXPRESSION_DEPTH) {
      throw new ParseFailure(`expression is nested too deeply (maximum depth ${MAX_EXPRESSION_DEPTH})`, token.offset);
    }
  }

  private leave(): void {
    this.depth--;
  }

  private parseBinary(minPrecedence: number): Expr {
    let left = this.parseUnary();
    for (;;) {
      const op = binaryOperatorOf(this.peek());
      if (op === undefined || BINARY_PRECEDENCE[op] < minPrecedence) return left;
      this.next();
      const right = this.parseBinary(BINARY_PRECEDENCE[op] + 1);
      left = { kind: 'binary', op, left, right };
    }
  }

  private parseUnary(): Expr {
    const token = this.peek();
    if (token.type === 'punct' && (token.text === '!' || token.text === '-')) {
      this.next();
      this.enter(token);
      const operand = this.parseUnary();
      this.leave();
      return { kind: 'unary', op: token.text, operand };
    }
    const primary = this.parsePrimary();
    const after = this.peek();
    if (after.type === 'punct' && after.text === '(' && primary.kind === 'path') {
      throw new ParseFailure('function calls are not supported', after.offset);
    }
    if (after.type === 'punct' && after.text === '[') {
      throw new ParseFailure('indexing with [...] is not supported', after.offset);
    }
    return primary;
  }

  private parsePrimary(): Expr {
    const token = this.peek();
    switch (token.type) {
      case 'number':
      case 'string':
        this.next();
        return { kind: 'literal', value: token.value };
      case 'name':
        if (KEYWORD_OPERATORS.has(token.text)) break;
        this.next();
        if (token.text === 'true') return { kind: 'literal', value: true };
        if (token.text === 'false') return { kind: 'literal', value: false };
        if (token.text === 'null') return { kind: 'literal', value: null };
        return this.parsePath(token);
      case 'punct':
        if (token.text === '(') return this.parseParenthesized(token);
        if (token.text === '[') return this.parseArray(token);
        break;
      case 'end':
        break;
    }
    throw this.expectedExpression(token);
  }

  private expectedExpression(found: Token): ParseFailure {
    if (this.pos === 0) {
      return found.type === 'end'
        ? new ParseFailure('empty expression', 0)
        : new ParseFailure(`unexpected token ${describeToken(found)}`, found.offset);
    }
    const previous = this.tokens[this.pos - 1];
    const suffix = found.type === 'end' ? '' : ` but found ${describeToken(found)}`;
    return new ParseFailure(`expected expression after "${previous.text}"${suffix}`, found.offset);
  }

  private parsePath(rootToken: Token): Expr {
    const root = rootToken.text;
    if (isForbiddenKey(root)) throw new ParseFailure(`"${root}" is not allowed in a path`, rootToken.offset);
    if (!this.allowedRoots.includes(root)) {
      throw new ParseFailure(
        `unknown root "${root}" (expected one of ${this.allowedRoots.join(', ')})`,
        rootToken.offset,
      );
    }
    const keys: string[] = [];
    while (this.isPunct('.')) {
      this.next();
      const keyToken = this.peek();
      // Keywords are fine as property names (`record.in`); only the token type matters here.
      if (keyToken.type !== 'name') {
        throw new ParseFailure(
          `expected a property name after "." but found ${describeToken(keyToken)}`,
          keyToken.offset,
        );
      }
      if (isForbiddenKey(keyToken.text)) {
        throw new ParseFailure(`"${keyToken.text}" is not allowed in a path`, keyToken.offset);
      }
      this.next();
      keys.push(keyToken.text);
    }
    return { kind: 'path', root, keys };
  }

  private parseParenthesized(open: Token): Expr {
    this.next();
    this.enter(open);
    const inner = this.parseBinary(1);
    this.leave();
    const close = this.peek();
    if (!this.isPunct(')')) throw new ParseFailure(`expected ")" but found ${describeToken(close)}`, close.offset);
    this.next();
    return inner;
  }

  private parseArray(open: Token): Expr {
    this.next();
    this.enter(open);
    const items: Expr[] = [];
    if (!this.isPunct(']')) {
      for (;;) {
        items.push(this.parseBinary(1));
        if (this.isPunct(',')) {
          this.next();
          continue;
        }
        if (this.isPunct(']')) break;
        const found = this.peek();
        throw new ParseFailure(`expected "," or "]" but found ${describeToken(found)}`, found.offset);
      }
    }
    this.next();
    this.leave();
    return { kind: 'array', items };
  }
}

export function parseExpression(source: string, allowedRoots: readonly string[] = EXPRESSION_ROOTS): ParseResult {
  // Runtime callers may hand over unchecked blueprint values, so the type is re-checked.
  if (typeof source !== 'string') {
    return { ok: false, error: { message: 'expression must be a string', offset: 0 } };
  }
  if (source.length > MAX_EXPRESSION_LENGTH) {
    return {
      ok: false,
      error: {
        message: `expression is too long (${source.length} characters, maximum ${MAX_EXPRESSION_LENGTH})`,
        offset: MAX_EXPRESSION_LENGTH,
      },
    };
  }
  try {
    const tokens = tokenize(source);
    return { ok: true, expr: new Parser(tokens, allowedRoots).parseAll() };
  } catch (error) {
    if (error instanceof ParseFailure) return { ok: false, error: { message: error.message, offset: error.offset } };
    throw error;
  }
}

/** Every path in source order. */
export function pathsOf(expr: Expr): Array<{ root: string; keys: string[] }> {
  const paths: Array<{ root: string; keys: string[] }> = [];
  const visit = (node: Expr): void => {
    switch (node.kind) {
      case 'literal':
        return;
      case 'array':
        node.items.forEach(visit);
        return;
      case 'path':
        paths.push({ root: node.root, keys: [...node.keys] });
        return;
      case 'unary':
        visit(node.operand);
        return;
      case 'binary':
        visit(node.left);
        visit(node.right);
        return;
    }
  };
  visit(expr);
  return paths;
}
