// A page's `[page.X.form]` as src/pages.ts holds it (runtime/pages/form-spec.ts): each field with
// the control it renders as, its choices written out (a select of an Enum field without options
// offers the Enum's values), and a lookup as the query of its choices. Validation has checked
// every name this reads.

import { isTable } from '../parse/load.ts';
import { list, str, strList, table } from '../model/raw.ts';
import type { FieldType } from '../../runtime-lib/core/values.ts';
import type { Blueprint, Entity, Page } from '../model/types.ts';
import { fileInputOffField } from '../model/pages.ts';
import { nonEmpty } from './ts-literal.ts';

/** The control of a field whose form field names no type: the natural one of its field type. */
const CONTROL_OF: Partial<Record<FieldType, string>> = {
  LongText: 'textarea',
  JSON: 'textarea',
  Email: 'email',
  Integer: 'number',
  Float: 'number',
  Boolean: 'checkbox',
  Date: 'date',
  DateTime: 'datetime',
  Enum: 'select',
  file: 'file',
};

/** A lookup offers this many records when its block names no limit. */
const LOOKUP_LIMIT = 20;

export function pageForm(bp: Blueprint, page: Page): Record<string, unknown> | undefined {
  const form = page.form;
  if (!form || page.layout !== 'form') return undefined;
  const entity = bp.entities.find((e) => e.name === form.entity) as Entity;
  return {
    entity: form.entity,
    method: form.method,
    // A file input writes only a `file` field (FORM_FILE_NOT_STORED warns of the others).
    fields: form.fields.filter((raw) => !fileInputOffField(entity, raw)).map((raw) => formField(bp, entity, raw)),
    sections: nonEmpty(
      form.sections.map((s) => ({ title: s.title, description: s.description, layout: s.layout, fields: s.fields })),
    ),
    validation: form.interaction?.validation,
    onSuccess: form.onSuccess && nonEmpty(dropUndefined(form.onSuccess)),
    onError: form.onError && nonEmpty(dropUndefined(form.onError)),
  };
}

function formField(bp: Blueprint, entity: Entity, raw: Record<string, unknown>): Record<string, unknown> {
  const name = str(raw.name) as string;
  const field = entity.fields.find((f) => f.name === name);
  const type = str(raw.type) ?? (field && CONTROL_OF[field.type]) ?? 'text';
  const optionsFrom = isTable(raw.optionsFrom) ? raw.optionsFrom : undefined;
  const written = list(raw.options).flatMap(option);
  const options =
    written.length > 0 || optionsFrom || (type !== 'select' && type !== 'radio')
      ? written
      : (field?.values ?? []).map((v) => ({ value: v, label: v }));
  return {
    name,
    type,
    label: str(raw.label),
    placeholder: str(raw.placeholder),
    required: raw.required === true ? true : undefined,
    default: raw.default,
    value: raw.value,
    options: nonEmpty(options),
    optionsFrom: optionsFrom && {
      query: str(optionsFrom.query),
      value: str(optionsFrom.value) ?? 'id',
      label: str(optionsFrom.label),
      emptyLabel: str(optionsFrom.emptyLabel),
    },
    rows: typeof raw.rows === 'number' ? raw.rows : undefined,
    pattern: str(raw.pattern),
    min: typeof raw.min === 'number' ? raw.min : undefined,
    max: typeof raw.max === 'number' ? raw.max : undefined,
    errorMessage: str(raw.error_message),
    accept: nonEmpty(strList(raw.accept)),
    lookup: type === 'lookup' && isTable(raw.lookup) ? lookup(bp, name, raw.lookup) : undefined,
  };
}

/** Zebric's options: strings (value and label alike) or `{ value, label }` tables. */
function option(raw: unknown): Array<{ value: string; label: string }> {
  if (typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean') {
    return [{ value: String(raw), label: String(raw) }];
  }
  if (!isTable(raw)) return [];
  const value = raw.value ?? raw.label;
  const label = raw.label ?? raw.value;
  if (value === undefined || value === null) return [];
  return [{ value: String(value as string), label: String(label as string) }];
}

/**
 * A lookup's choices: the first `limit` records of its entity the viewer may read, `filter`
 * applied, in the order of its first search field; each shown by `display` (`{field}` templates,
 * or a field's name), sent as its key.
 */
function lookup(bp: Blueprint, field: string, raw: Record<string, unknown>): Record<string, unknown> {
  const entity = bp.entities.find((e) => e.name === raw.entity) as Entity;
  const search = strList(raw.search);
  const display = str(raw.display);
  const isField = display !== undefined && entity.fields.some((f) => f.name === display);
  return {
    query: {
      name: `lookup.${field}`,
      entity: entity.name,
      where: nonEmpty(Object.entries(table(raw.filter)).map(([name, value]) => ({ field: name, value }))),
      orderBy: [{ field: search[0], direction: 'asc' }],
      limit: typeof raw.limit === 'number' ? raw.limit : LOOKUP_LIMIT,
    },
    key: entity.primaryKey.name,
    display: display === undefined ? `{${search[0]}}` : isField ? `{${display}}` : display,
    placeholder: str(raw.placeholder),
  };
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
