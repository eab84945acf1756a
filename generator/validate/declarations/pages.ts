// Rules on one page declaration that need nothing else: its form fields' MIME types.

import type { CompileContext } from '../../context.ts';
import { list, table, type Raw } from '../../model/raw.ts';
import { isTable } from '../../parse/load.ts';
import { checkMimeTypes } from './common.ts';

export function checkPage(ctx: CompileContext, route: string, raw: Raw): void {
  list(table(raw.form).fields).forEach((f, i) => {
    if (isTable(f)) checkMimeTypes(ctx, ['page', route, 'form', 'fields', i, 'accept'], f.accept);
  });
}
