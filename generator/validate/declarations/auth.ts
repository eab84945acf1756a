// Rules on [auth]: permission entries that are not Entity.action patterns, permission conditions.

import type { CompileContext } from '../../context.ts';
import { permissionPattern } from '../../model/build-sections.ts';
import { ACCESS_ROOTS } from '../../model/conditions.ts';
import { list, type Raw } from '../../model/raw.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { checkCondition } from './conditions.ts';

export function checkAuth(ctx: CompileContext, raw: Raw): void {
  if (!isTable(raw.permissions)) return;
  for (const [role, rules] of Object.entries(raw.permissions)) {
    if (!isTable(rules)) continue;
    for (const kind of ['allow', 'deny'] as const)
      permissionEntries(ctx, ['auth', 'permissions', role, kind], rules[kind]);
  }
}

function permissionEntries(ctx: CompileContext, at: KeyPath, raw: unknown): void {
  list(raw).forEach((entry, i) => {
    if (typeof entry === 'string' && !permissionPattern(entry)) {
      ctx.report('INVALID_PERMISSION', [...at, i], `"${entry}" is not an Entity.action pattern`, {
        hint: 'write e.g. "Ticket.read" or "*.*"',
      });
    } else if (isTable(entry)) {
      checkCondition(ctx, [...at, i, 'condition'], entry.condition, ACCESS_ROOTS);
    }
  });
}
