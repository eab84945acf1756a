// The blueprint's templates over a page's record: links (`/tickets/:id`, `/tickets/{id}`), an
// action's payload (`{{ field }}`), a card's paths (`customer.name`), and a widget event's update
// (Zebric's `$row.<field>`, `$to.id`, `$value`...). Values are read as own properties only.

import type { Row } from '../data/database.ts';
import type { EntitySpec } from '../data/entity-store.ts';
import { readPath } from '../rules/expression-eval.ts';
import { recordDigest } from './command-forms.ts';

/** What a template reads: the record (as this viewer reads it) and the page path's parameters. */
export interface TemplateScope {
  record?: Row | null;
  params: Readonly<Record<string, string>>;
}

/** `customer.name` of the record, or `params.id` of the path. */
export function readScoped(scope: TemplateScope, path: string): unknown {
  const keys = path.split('.');
  if (keys[0] === 'params' && keys.length === 2)
    return Object.hasOwn(scope.params, keys[1]) ? scope.params[keys[1]] : undefined;
  if (keys[0] === 'record' && keys.length > 1) keys.shift();
  return scope.record ? readPath(scope.record, keys) : undefined;
}

/**
 * A link with `:name` and `{name}` filled (URL-encoded) from the record or the path's parameters;
 * undefined unless it is a path on this site or an http(s) or mailto address.
 */
export function fillHref(template: string, scope: TemplateScope): string | undefined {
  const fill = (name: string) => encodeURIComponent(String(readScoped(scope, name) ?? ''));
  const href = template.replace(/\{([\w.]+)\}|:([A-Za-z_]\w*)/g, (_m, braced: string, bare: string) =>
    fill(braced ?? bare),
  );
  return /^(\/(?!\/)|https?:\/\/|mailto:)/i.test(href) ? href : undefined;
}

const PLACEHOLDER = /\{\{\s*([\w.]+)\s*\}\}|\{([\w.]+)\}/g;

/**
 * A payload's values: a string that is one `{{ name }}` (or `{name}`) is that value as it is (a
 * number stays a number); placeholders inside other text are filled as text; other values stay.
 */
export function fillPayload(
  payload: Readonly<Record<string, unknown>> | undefined,
  scope: TemplateScope,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(payload ?? {})) {
    if (typeof value !== 'string') {
      out[key] = value;
      continue;
    }
    const whole = /^\{\{\s*([\w.]+)\s*\}\}$|^\{([\w.]+)\}$/.exec(value);
    out[key] = whole
      ? (readScoped(scope, whole[1] ?? whole[2]) ?? null)
      : value.replace(PLACEHOLDER, (_m, a: string, b: string) => String(readScoped(scope, a ?? b) ?? ''));
  }
  return out;
}

/** What a widget event says happened: the target column, the drop index, the field and its new value. */
export interface WidgetEventContext {
  to?: { id: unknown; value: unknown };
  index?: number;
  field?: string;
  value?: unknown;
}

/**
 * A widget event's `update` template as the change it makes to `row`, with Zebric's placeholders:
 * `$to.id`, `$to.value`, `$index`, `$value`, `$field`, `$now`, `$row.<field>` and `!$row.<field>`
 * (`$row.$field` for the event's field), and `$field` or `$row.$field` as a key (the event's field;
 * `$row.<name>` as a key is the field `<name>`).
 */
export function widgetUpdate(
  template: Readonly<Record<string, unknown>>,
  row: Row,
  ctx: WidgetEventContext,
  now: Date,
): Row {
  const out: Row = {};
  const field = (name: string) =>
    name === '$field' || name === '$row.$field' ? ctx.field : name.startsWith('$row.') ? name.slice(5) : name;
  for (const [rawKey, raw] of Object.entries(template)) {
    const key = field(rawKey);
    if (!key) continue;
    out[key] = widgetValue(raw, row, ctx, now);
  }
  return out;
}

function widgetValue(raw: unknown, row: Row, ctx: WidgetEventContext, now: Date): unknown {
  if (typeof raw !== 'string') return raw;
  switch (raw) {
    case '$now':
      return now.toISOString();
    case '$index':
      return ctx.index;
    case '$value':
      return ctx.value;
    case '$field':
      return ctx.field;
    case '$to.id':
      return ctx.to?.id;
    case '$to.value':
      return ctx.to?.value;
  }
  const negated = raw.startsWith('!');
  const path = negated ? raw.slice(1) : raw;
  if (!path.startsWith('$row.')) return raw;
  const name = path === '$row.$field' ? ctx.field : path.slice('$row.'.length);
  const value = name && Object.hasOwn(row, name) ? row[name] : undefined;
  return negated ? !value : value;
}

/**
 * What a page showed of a record, to compare a post with: the digest of its entity's own fields
 * as this viewer reads them, without the relations a page's query includes with it.
 */
export function fieldsDigest(spec: EntitySpec, record: Row): string {
  const own = spec.fields.filter((f) => Object.hasOwn(record, f.name)).map((f) => [f.name, record[f.name]]);
  return recordDigest(Object.fromEntries(own));
}
