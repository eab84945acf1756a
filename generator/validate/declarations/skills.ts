// Rules on one skill declaration: an action's risk agrees with its method (Zebric's rule: GET is
// a read, anything else is not), and its typed query parameters have types that exist.

import type { CompileContext } from '../../context.ts';
import { isInputType } from '../../model/build-sections.ts';
import { list, table, text, type Raw } from '../../model/raw.ts';
import { FIELD_TYPES } from '../../../runtime-lib/core/values.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';

export function checkSkill(ctx: CompileContext, name: string, raw: Raw): void {
  list(raw.actions).forEach((a, i) => {
    if (isTable(a)) checkAction(ctx, ['skill', name, 'actions', i], a);
  });
}

function checkAction(ctx: CompileContext, at: KeyPath, a: Raw): void {
  const { method, risk } = a;
  if (typeof risk === 'string' && typeof method === 'string' && (method === 'GET') !== (risk === 'read')) {
    ctx.report(
      'INVALID_RISK',
      [...at, 'risk'],
      method === 'GET'
        ? `a GET skill action reads, so its risk is "read", not "${risk}"`
        : `a ${method} skill action changes data, so its risk cannot be "read"`,
      {
        hint:
          method === 'GET'
            ? 'write risk = "read", or leave it out'
            : 'write risk = "write", "destructive" or "external", or leave it out',
      },
    );
  }
  for (const [param, def] of Object.entries(table(a.query))) {
    const type = isTable(def) ? text(def.type) : '';
    if (isTable(def) && typeof def.type === 'string' && !isInputType(type)) {
      ctx.report(
        'UNKNOWN_FIELD_TYPE',
        [...at, 'query', param, 'type'],
        `unknown type "${type}" for query parameter "${param}"`,
        {
          hint: didYouMean(type, FIELD_TYPES) ?? `types: ${FIELD_TYPES.filter((t) => t !== 'file').join(', ')}`,
        },
      );
    }
  }
}
