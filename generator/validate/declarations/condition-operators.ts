// The operator tables of workflow conditions, as the runtime reads them
// (runtime-lib/workflows/step-condition.ts): a path's value may be a table of operators
// ({ "$ne" = "" }), and a condition step's `if` may combine tables with `$and` / `$or` lists. An
// operator the runtime does not know would fail every job at run time (or, in an entity trigger's
// condition, the write that meets it): refused here (INVALID_CONDITION).

import type { CompileContext } from '../../context.ts';
import { list, table, type Raw } from '../../model/raw.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';

const OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'];

/** Checks `paths -> value` tables; `logical`: `$and` / `$or` lists are allowed (a condition step's `if`). */
export function checkConditionOperators(ctx: CompileContext, at: KeyPath, raw: Raw | unknown, logical: boolean): void {
  for (const [key, value] of Object.entries(table(raw))) {
    if (logical && (key === '$and' || key === '$or')) {
      list(value).forEach((inner, i) => checkConditionOperators(ctx, [...at, key, i], inner, true));
      continue;
    }
    if (!isTable(value) || !Object.keys(value).some((k) => k.startsWith('$'))) continue;
    for (const op of Object.keys(value)) {
      if (OPERATORS.includes(op)) continue;
      ctx.report('INVALID_CONDITION', [...at, key, op], `"${op}" is not an operator of a workflow condition`, {
        hint: `an operator table holds only ${OPERATORS.join(', ')}; to compare with a table, write one without $ keys`,
      });
    }
  }
}
