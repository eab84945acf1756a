// Rules on one service declaration: the typed values of its operations (Zebric's
// ExternalValueSchema) have types that exist, an Object lists its fields and an Array its items.

import type { CompileContext } from '../../context.ts';
import { isInputType } from '../../model/build-sections.ts';
import { table, text, type Raw } from '../../model/raw.ts';
import { FIELD_TYPES } from '../../../runtime-lib/core/values.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';

const VALUE_TYPES = [...FIELD_TYPES.filter((t) => t !== 'file'), 'Object', 'Array'];

export function checkService(ctx: CompileContext, name: string, raw: Raw): void {
  for (const [op, def] of Object.entries(table(raw.operations))) {
    if (!isTable(def)) continue;
    const at: KeyPath = ['service', name, 'operations', op];
    for (const [input, value] of Object.entries(table(def.input))) checkValue(ctx, [...at, 'input', input], value);
    if (def.result !== undefined) checkValue(ctx, [...at, 'result'], def.result);
  }
}

function checkValue(ctx: CompileContext, at: KeyPath, value: unknown): void {
  if (!isTable(value) || typeof value.type !== 'string') return;
  const type = text(value.type);
  if (type !== 'Object' && type !== 'Array' && !isInputType(type)) {
    ctx.report('UNKNOWN_FIELD_TYPE', [...at, 'type'], `unknown value type "${type}"`, {
      hint: didYouMean(type, VALUE_TYPES) ?? `value types: ${VALUE_TYPES.join(', ')}`,
    });
  }
  if (type === 'Object' && value.fields === undefined)
    ctx.report('MISSING_KEY', [...at, 'fields'], 'an Object value needs fields');
  if (type === 'Array' && value.items === undefined)
    ctx.report('MISSING_KEY', [...at, 'items'], 'an Array value needs items');
  for (const [field, inner] of Object.entries(table(value.fields))) checkValue(ctx, [...at, 'fields', field], inner);
  if (value.items !== undefined) checkValue(ctx, [...at, 'items'], value.items);
}
