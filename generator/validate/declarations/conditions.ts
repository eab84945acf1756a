// A condition (entity or field access, policy, availableWhen, permission condition) must parse.
// An expression that does not is reported at the character where it fails, inside the string as
// written in the TOML file.

import { parseCondition } from '../../../runtime-lib/rules/conditions.ts';
import { parseExpression } from '../../../runtime-lib/rules/expression-parse.ts';
import type { CompileContext } from '../../context.ts';
import { valueAt } from '../../model/raw.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';

export function checkCondition(ctx: CompileContext, at: KeyPath, value: unknown, roots: readonly string[]): void {
  if (value === undefined) return;
  const result = parseCondition(value, { allowedRoots: roots });
  if (result.ok) return;
  for (const issue of result.issues) {
    const keys = [...at, ...issue.keys];
    const source = valueAt(value, issue.keys);
    const parsed =
      typeof source === 'string' && issue.message.startsWith('expression does not parse')
        ? parseExpression(source, roots)
        : undefined;
    if (parsed && !parsed.ok) {
      // The position says where; the message need not repeat it as a column of the expression.
      ctx.report('INVALID_CONDITION', keys, `expression does not parse: ${parsed.error.message}`, {
        hint: rootHint(source as string, parsed.error.offset, roots),
        within: { offset: parsed.error.offset, part: 'value' },
      });
    } else {
      ctx.report('INVALID_CONDITION', keys, issue.message);
    }
  }
}

/** "did you mean" for an expression that fails at a name that is not one of its roots. */
function rootHint(source: string, offset: number, roots: readonly string[]): string | undefined {
  const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(offset))?.[0];
  return name === undefined || roots.includes(name) ? undefined : didYouMean(name, roots);
}
