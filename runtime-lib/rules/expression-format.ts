// Formatting a parsed expression back to canonical source text.

import { BINARY_PRECEDENCE, type Expr } from './expression-parse.ts';

function formatString(value: string): string {
  return `'${value.replace(/[\\'\n\t]/g, (ch) => (ch === '\n' ? '\\n' : ch === '\t' ? '\\t' : `\\${ch}`))}'`;
}

function formatLiteral(value: string | number | boolean | null): string {
  return typeof value === 'string' ? formatString(value) : String(value);
}

/**
 * Canonical source text with the fewest parentheses. For any tree produced by
 * parseExpression, parsing the result yields an identical tree (literals from
 * the parser are never negative, so `-3` round-trips as unary minus).
 */
export function formatExpression(expr: Expr): string {
  switch (expr.kind) {
    case 'literal':
      return formatLiteral(expr.value);
    case 'array':
      return `[${expr.items.map(formatExpression).join(', ')}]`;
    case 'path':
      return [expr.root, ...expr.keys].join('.');
    case 'unary': {
      const operand = formatExpression(expr.operand);
      return expr.op + (expr.operand.kind === 'binary' ? `(${operand})` : operand);
    }
    case 'binary': {
      const precedence = BINARY_PRECEDENCE[expr.op];
      // Left-associative: an equal-precedence operand needs parentheses only on the right.
      const left = formatOperand(expr.left, (p) => p < precedence);
      const right = formatOperand(expr.right, (p) => p <= precedence);
      return `${left} ${expr.op} ${right}`;
    }
  }
}

function formatOperand(operand: Expr, needsParentheses: (precedence: number) => boolean): string {
  const text = formatExpression(operand);
  return operand.kind === 'binary' && needsParentheses(BINARY_PRECEDENCE[operand.op]) ? `(${text})` : text;
}
