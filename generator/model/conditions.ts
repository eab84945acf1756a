// Conditions as the model holds them: the blueprint's own text beside its parsed form. Which
// roots an expression may read depends on where it is written.

import { parseCondition } from '../../runtime-lib/rules/conditions.ts';
import { EXPRESSION_ROOTS } from '../../runtime-lib/rules/expression-parse.ts';
import type { Rule } from './types.ts';

/** Roots an entity, field or permission rule may read: there is no command input there. */
export const ACCESS_ROOTS: readonly string[] = ['actor', 'record', 'now'];
/** Roots a command's policy and availableWhen may read. */
export const COMMAND_ROOTS: readonly string[] = EXPRESSION_ROOTS;

/** The parsed rule, or undefined when the value is not a valid condition (a declaration rule reports it). */
export function parseRule(value: unknown, roots: readonly string[]): Rule | undefined {
  if (value === undefined) return undefined;
  const result = parseCondition(value, { allowedRoots: roots });
  return result.ok ? { source: value as Rule['source'], condition: result.condition } : undefined;
}
