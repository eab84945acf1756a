// `layout = "form"`: the page's form (form-spec.ts), posted back to the page (form-actions.ts).
// A create form starts from each field's default; an update or delete form shows the record its
// page's first query names as this viewer reads it (a field the viewer may not read is neither
// shown nor sent, so it stays as it is), with the page's view of it (`_seen`) so that a post
// from a page that no longer shows the record as it is is refused. A refused post shows the form
// again with the person's input and each field's message beside it.

import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { Row } from '../data/database.ts';
import type { EntitySpec, EntityStore, RequestContext } from '../data/entity-store.ts';
import { recordDigest } from './command-forms.ts';
import { recordFields } from './detail-layout.ts';
import { type ControlState, fieldLabel, formBody, formControl } from './form-fields.ts';
import type { FormOption, PageFormFieldSpec, PageFormSpec } from './form-spec.ts';
import { html, type Html } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import { runPageQueries, type QueryResult } from './page-queries.ts';
import type { PageRequest } from './page-routes.ts';

/** A refused submission: the message, each field's problem, and what the person sent. */
export interface FormFailure {
  message: string;
  details: readonly ErrorDetail[];
  sent: Readonly<Record<string, string>>;
}

/**
 * The layout: the form formPart made for this request, or the page's `form.form` slot (given the
 * form and, for an update or delete, its record, as Zebric gives them).
 */
export function formLayout(view: LayoutContext): Html {
  const first = view.page.queries[0];
  const record = view.page.form?.method !== 'create' && first ? view.results[first.name]?.records[0] : undefined;
  return view.slot?.('form.form', { form: view.page.form, record }) ?? view.form ?? html``;
}

/** The form for this viewer, or undefined when the record an update or delete form acts on is not there. */
export async function formPart(
  pr: PageRequest,
  results: Readonly<Record<string, QueryResult>>,
  ctx: RequestContext,
  failure?: FormFailure,
): Promise<Html | undefined> {
  const form = pr.page.form as PageFormSpec;
  const store = pr.site.stores.get(form.entity);
  if (!store) return undefined;
  const record = form.method === 'create' ? undefined : results[pr.page.queries[0].name].records[0];
  if (form.method !== 'create' && !record) return undefined;
  const fields = shownFields(form, record);
  const choices = await formChoices(pr, fields, results, ctx, record, failure);
  const csrf = pr.site.signIn?.csrfToken(pr.req, pr.res);
  const hidden = html`${csrf ? html`<input type="hidden" name="_csrf" value="${csrf}">\n` : ''}\
<input type="hidden" name="_action" value="form">
${record ? html`<input type="hidden" name="_seen" value="${recordDigest(record)}">\n` : ''}`;
  const alert = failure
    ? html`<div class="flash error" role="alert"><p>${failure.message}</p>${summary(form, failure)}</div>\n`
    : '';
  const multipart = fields.some((f) => f.type === 'file') ? html` enctype="multipart/form-data"` : '';
  const label = pr.page.title;
  if (form.method === 'delete') {
    const shown = fields.length ? filterRecord(record as Row, fields) : (record as Row);
    return html`<form method="post" class="page-form" aria-label="${label}">
${hidden}${alert}<section>${recordFields(store.spec, shown, new Map())}</section>
<p>Delete this ${humanEntity(store.spec)}? This cannot be undone.</p>
<button type="submit" class="danger">Delete</button>
</form>\n`;
  }
  const control = (field: PageFormFieldSpec) =>
    formControl(field, controlState(field, store.spec, record, choices.get(field.name) ?? [], failure));
  return html`<form method="post" class="page-form" aria-label="${label}"${multipart}>
${hidden}${alert}${formBody(fields, form.sections, control)}\
<button type="submit" class="primary">${form.method === 'create' ? 'Create' : 'Save'}</button>
</form>\n`;
}

/**
 * The fields an update form shows: those the viewer may read on the record (others are left as
 * they are). A create form shows them all; a password is write-only, so always.
 */
export function shownFields(form: PageFormSpec, record: Row | undefined): PageFormFieldSpec[] {
  if (!record) return [...form.fields];
  return form.fields.filter((f) => f.type === 'password' || f.value !== undefined || Object.hasOwn(record, f.name));
}

function filterRecord(record: Row, fields: readonly PageFormFieldSpec[]): Row {
  return Object.fromEntries(Object.entries(record).filter(([k]) => fields.some((f) => f.name === k)));
}

function humanEntity(spec: EntitySpec): string {
  return spec.name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}

/** With `validation = "summary"`: each refused field, linked to its control. */
function summary(form: PageFormSpec, failure: FormFailure): Html | string {
  if (form.validation !== 'summary') return '';
  const items = failure.details
    .filter((d) => d.field && form.fields.some((f) => f.name === d.field))
    .map((d) => {
      const field = form.fields.find((f) => f.name === d.field) as PageFormFieldSpec;
      return html`<li><a href="#field-${field.name}">${fieldLabel(field)}: ${d.message}</a></li>\n`;
    });
  return items.length ? html`\n<ul>\n${items}</ul>` : '';
}

function controlState(
  field: PageFormFieldSpec,
  spec: EntitySpec,
  record: Row | undefined,
  choices: readonly FormOption[],
  failure: FormFailure | undefined,
): ControlState {
  const problem = failure?.details.find((d) => d.field === field.name);
  if (failure) {
    const sent = failure.sent[field.name];
    return { value: sent, checked: sent !== undefined && sent !== '', choices, problem };
  }
  const declared = spec.fields.find((f) => f.name === field.name);
  // A create form starts from the form field's default, else the entity field's (not `now`); not
  // for a command-only field, which a create may not write: left empty, the store applies it.
  const entityDefault = declared?.default && 'value' in declared.default ? declared.default.value : undefined;
  const start = field.default ?? (declared?.commandOnly ? undefined : entityDefault);
  const raw = field.value !== undefined ? field.value : record ? record[field.name] : start;
  const type = declared?.type;
  return { value: shownValue(raw, field, type), checked: raw === true, choices, problem };
}

/** A stored value as its control holds it: a date-time as datetime-local reads it (UTC), JSON as text. */
function shownValue(value: unknown, field: PageFormFieldSpec, type: string | undefined): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (field.type === 'datetime' && typeof value === 'string') {
    return /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})/.exec(value)?.[1] ?? value;
  }
  if (type === 'JSON' || (typeof value === 'object' && value !== null)) return JSON.stringify(value);
  return String(value as string);
}

/**
 * The choices of select, radio and lookup fields: written options, a page query's records, or a
 * lookup's records (each read as the viewer reads its entity). A lookup also offers the value
 * the control holds when it is not among the first records, so saving keeps it.
 */
async function formChoices(
  pr: PageRequest,
  fields: readonly PageFormFieldSpec[],
  results: Readonly<Record<string, QueryResult>>,
  ctx: RequestContext,
  record: Row | undefined,
  failure: FormFailure | undefined,
): Promise<Map<string, FormOption[]>> {
  const out = new Map<string, FormOption[]>();
  const lookups = fields.filter((f) => f.lookup);
  const found = lookups.length
    ? await store(pr).db.read(
        runPageQueries(
          pr.site.stores,
          lookups.map((f) => f.lookup!.query),
          ctx,
          pr.params,
        ),
        ctx.trace,
      )
    : {};
  for (const field of fields) {
    if (field.optionsFrom) {
      const from = field.optionsFrom;
      const rows = results[from.query]?.records ?? [];
      out.set(
        field.name,
        rows
          .filter((r) => r[from.value] !== undefined && r[from.value] !== null)
          .map((r) => ({ value: String(r[from.value] as string), label: String((r[from.label] ?? '') as string) })),
      );
    } else if (field.lookup) {
      const lookup = field.lookup;
      const options = found[lookup.query.name].records.map((r) => ({
        value: String(r[lookup.key] as string),
        label: display(lookup.display, r),
      }));
      const held = failure ? failure.sent[field.name] : record?.[field.name];
      if (held !== undefined && held !== null && held !== '' && !options.some((o) => o.value === String(held))) {
        options.unshift(await heldChoice(pr, ctx, lookup, held));
      }
      out.set(field.name, options);
    } else {
      out.set(field.name, [...(field.options ?? [])]);
    }
  }
  return out;
}

/** The record a lookup holds, shown as the lookup shows its choices (its key when the viewer may not read it). */
async function heldChoice(
  pr: PageRequest,
  ctx: RequestContext,
  lookup: NonNullable<PageFormFieldSpec['lookup']>,
  held: unknown,
): Promise<FormOption> {
  const query = { name: 'held', entity: lookup.query.entity, where: [{ field: lookup.key, value: held }], limit: 1 };
  let found: Row | undefined;
  try {
    const result = await store(pr).db.read(runPageQueries(pr.site.stores, [query], ctx, {}), ctx.trace);
    found = result.held.records[0];
  } catch (err) {
    // A value that is no key of the entity (sent by hand) is shown as sent; saving refuses it.
    if (!(err instanceof AppError && err.code === 'VALIDATION_FAILED')) throw err;
  }
  return { value: String(held as string), label: found ? display(lookup.display, found) : String(held as string) };
}

/** `{field}` placeholders filled from the record; a field the viewer may not read reads empty. */
function display(template: string, record: Row): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = record[name];
    return value === undefined || value === null ? '' : String(value as string);
  });
}

function store(pr: PageRequest): EntityStore {
  return pr.site.stores.get((pr.page.form as PageFormSpec).entity) as EntityStore;
}
