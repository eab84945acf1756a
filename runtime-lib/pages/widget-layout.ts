// A `widget` page of kind "board" (Zebric 0.6's kanban widget), without JavaScript: the records of
// the widget's entity (the page's query of that entity) in columns (the records of `column_entity`
// by `column_order`, or the declared `columns` of a text or Enum `group_by`), each column's cards
// by `rank_field`. What Zebric's client does by dragging, double-clicking and clicking is a small
// form per card: "Move to" (`on_move`), a button per toggle (`on_toggle`), "Edit" the title
// (`on_edit`), and "Rename" per column (`on_column_rename`). Each event is an update of the record
// through its entity store as the viewer (access and field rules apply) and/or a workflow, in one
// unit of work; a post from a page that showed the record otherwise than it is now is refused.

import { AppError } from '../core/errors.ts';
import type { RecordKey } from '../core/ids.ts';
import type { Row, Work } from '../data/database.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import { requestContext } from '../http/context.ts';
import type { ActionPages } from './command-actions.ts';
import { html, type Html } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import type { QueryResult } from './page-queries.ts';
import type { PageRequest } from './page-routes.ts';
import type { PageWorkflows, WidgetSpec } from './page-spec.ts';
import { cardList } from './board-layout.ts';
import { leaveFlash, redirect } from './page-view.ts';
import { fieldsDigest, fillHref, readScoped, type WidgetEventContext, widgetUpdate } from './record-templates.ts';
import { humanize } from './values.ts';

type WidgetEvent = 'move' | 'toggle' | 'edit' | 'column_rename';

interface Column {
  value: string;
  label: string;
  description?: string;
  /** The column entity's record (`column_entity`), renamed by `on_column_rename`. */
  record?: Row;
}

/** The records of `entity` the page's queries read (Zebric takes the first query of that entity). */
function recordsOf(results: Readonly<Record<string, QueryResult>>, entity: string | undefined): Row[] {
  return Object.values(results).find((r) => r.entity === entity)?.records ?? [];
}

function byNumber(field: string): (a: Row, b: Row) => number {
  const n = (v: unknown) => (typeof v === 'number' ? v : Number(v ?? 0) || 0);
  return (a, b) => n(a[field]) - n(b[field]);
}

function columnsOf(widget: WidgetSpec, view: LayoutContext): Column[] {
  if (!widget.columnEntity) return (widget.columns ?? []).map((c) => ({ ...c }));
  const key = view.entity(widget.columnEntity).primaryKey;
  return [...recordsOf(view.results, widget.columnEntity)].sort(byNumber(widget.columnOrder)).map((record) => ({
    value: String(record[key]),
    label: String(record[widget.columnLabel] ?? record[key]),
    record,
  }));
}

export function widgetLayout(view: LayoutContext): Html {
  const widget = view.page.widget as WidgetSpec;
  const key = view.entity(widget.entity).primaryKey;
  const columns = columnsOf(widget, view);
  const items = [...recordsOf(view.results, widget.entity)].sort(byNumber(widget.rankField));
  const csrf = view.csrfToken ? html`<input type="hidden" name="_csrf" value="${view.csrfToken}">\n` : '';
  const link = view.links.get(widget.entity);
  const itemSpec = view.entity(widget.entity);
  // A column is renamed only where the columns are records of column_entity.
  const columnSpec = widget.columnEntity ? view.entity(widget.columnEntity) : itemSpec;
  const form = (event: WidgetEvent, record: Row, recordKey: unknown, body: Html, label: string) =>
    html`<form method="post" class="widget-event" aria-label="${label}">
${csrf}<input type="hidden" name="_action" value="widget">
<input type="hidden" name="_event" value="${event}">
<input type="hidden" name="_id" value="${String(recordKey)}">
<input type="hidden" name="_seen" value="${fieldsDigest(event === 'column_rename' ? columnSpec : itemSpec, record)}">
${body}</form>
`;
  const card = (record: Row, column: Column): Html => {
    const id = record[key];
    const scope = { record, params: {} };
    const title = String(record[widget.card.title] ?? id ?? '');
    const href = widget.card.href ? fillHref(widget.card.href, scope) : link && id !== undefined ? link(id) : undefined;
    const subtitle = widget.card.subtitle ? readScoped(scope, widget.card.subtitle) : undefined;
    const meta = (widget.card.meta ?? []).map((m) => readScoped(scope, m)).filter((v) => v !== undefined && v !== null);
    const toggles = (widget.card.toggles ?? []).map((t) => {
      const on = Boolean(record[t.field]);
      const text = (on ? t.labelOn : t.labelOff) ?? t.label ?? (on ? '★' : '☆');
      const disabled = widget.events.toggle ? '' : html` disabled`;
      const button = html`<button type="submit" name="_field" value="${t.field}" class="toggle${on ? ' on' : ''}" \
aria-pressed="${on ? 'true' : 'false'}" aria-label="${humanize(t.field)}"${disabled}>${text}</button>\n`;
      return widget.events.toggle ? form('toggle', record, id, button, humanize(t.field)) : button;
    });
    const targets = columns.filter((c) => c.value !== column.value);
    const moveId = `move-${String(id)}`;
    const move =
      widget.events.move && targets.length
        ? form(
            'move',
            record,
            id,
            html`<input type="hidden" name="_from" value="${column.value}">
<label for="${moveId}">Move to</label>
<select id="${moveId}" name="_to">${targets.map((c) => html`<option value="${c.value}">${c.label}</option>`)}</select>
<button type="submit" class="secondary">Move</button>
`,
            `Move ${title}`,
          )
        : '';
    const editId = `edit-${String(id)}`;
    const edit = widget.events.edit
      ? html`<details><summary>Edit</summary>
${form(
  'edit',
  record,
  id,
  html`<label for="${editId}">${humanize(widget.card.title)}</label>
<input id="${editId}" name="_value" value="${title}" required>
<button type="submit" class="secondary">Save</button>
`,
  `Edit ${title}`,
)}</details>
`
      : '';
    return html`<li class="card">
<h3>${href ? html`<a href="${href}">${title}</a>` : title}</h3>
${subtitle !== undefined && subtitle !== null ? html`<p>${String(subtitle)}</p>\n` : ''}\
${meta.length ? html`<p class="none">${meta.map(String).join(' · ')}</p>\n` : ''}\
${toggles.length ? html`<div class="toggles">${toggles}</div>\n` : ''}${move}${edit}</li>
`;
  };
  const columnKey = widget.columnEntity ? view.entity(widget.columnEntity).primaryKey : '';
  const parts = columns.map((column) => {
    const cards = items.filter((r) => String(r[widget.groupBy] ?? '') === column.value);
    const renameId = `rename-${column.value}`;
    const rename =
      widget.events.column_rename && column.record
        ? html`<details><summary>Rename</summary>
${form(
  'column_rename',
  column.record,
  column.record[columnKey],
  html`<label for="${renameId}">${humanize(widget.columnLabel)}</label>
<input id="${renameId}" name="_value" value="${column.label}" required>
<button type="submit" class="secondary">Rename</button>
`,
  `Rename ${column.label}`,
)}</details>
`
        : '';
    return html`<section class="column" aria-label="${column.label}">
<h2>${column.label} <span class="count">${cards.length}</span></h2>
${rename}${cardList(cards.map((c) => card(c, column)))}</section>
`;
  });
  return html`<div class="board">\n${parts}</div>\n`;
}

/**
 * POST `_action=widget`: the event `_event` on record `_id` (a card, or a column for
 * `column_rename`), as the viewer, in one unit of work: the record read as they may read it (and
 * refused unless it is as the page showed it), the update written through the entity store (its
 * access and field rules), then the workflow's job stored.
 */
export async function widgetEvent(
  workflows: PageWorkflows | undefined,
  pr: PageRequest,
  sent: Readonly<Record<string, string>>,
  pages: ActionPages,
): Promise<void> {
  const widget = pr.page.widget;
  const event = sent._event as WidgetEvent;
  const handler = widget && Object.hasOwn(widget.events, event) ? widget.events[event] : undefined;
  if (!widget || !handler || (handler.workflow && !workflows) || sent._id === undefined)
    throw new AppError('VALIDATION_FAILED', 'this page has no such action');
  const entity = event === 'column_rename' ? widget.columnEntity : widget.entity;
  const store = entity === undefined ? undefined : pr.site.stores.get(entity);
  if (!store) throw new AppError('VALIDATION_FAILED', 'this page has no such action');
  const refuse = (status: number, text: string) => pages.render(pr, { status, flash: { kind: 'error', text } });
  const eventCtx = eventContext(widget, event, sent);
  if (typeof eventCtx === 'string') return refuse(400, eventCtx);
  const ctx = requestContext(pr.req, { mutation: true });
  const id = sent._id as RecordKey;
  const prepare = function* (): Work<Record<string, unknown>> {
    const row = yield* store.get(ctx, id);
    if (sent._seen !== fieldsDigest(store.spec, row))
      throw new AppError(
        'STATE_CONFLICT',
        'Nothing was changed: this record changed since the page showed it. Look again.',
      );
    if (event === 'move' && String(row[widget.groupBy] ?? '') !== sent._from)
      throw new AppError('STATE_CONFLICT', 'Nothing was changed: the card is no longer in the column the page showed.');
    const changed = handler.update
      ? yield* updated(store, ctx, id, widgetUpdate(handler.update, row, eventCtx, new Date()))
      : row;
    return {
      row: changed,
      record: changed,
      ctx: eventCtx,
      entity,
      recordId: id,
      page: pr.page.path,
      params: pr.params,
    };
  };
  try {
    if (handler.workflow) await (workflows as PageWorkflows).submit(ctx, handler.workflow, prepare);
    else await store.db.write(prepare, ctx.trace);
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    if (err.code === 'NOT_FOUND') return refuse(404, 'Nothing was changed: the record is not on this page any more.');
    return refuse(err.status, err.code === 'STATE_CONFLICT' ? err.message : `Nothing was changed: ${err.message}.`);
  }
  leaveFlash(pages.site, pr.res, { kind: 'success', text: 'Saved.' });
  redirect(pr.res, (pr.req.url ?? '/').split('?')[0]);
}

function* updated(store: EntityStore, ctx: RequestContext, id: RecordKey, change: Row): Work<Row> {
  return Object.keys(change).length ? yield* store.update(ctx, id, change) : yield* store.get(ctx, id);
}

/** What the form says happened, as Zebric's client would say it; a message when it says nothing usable. */
function eventContext(
  widget: WidgetSpec,
  event: WidgetEvent,
  sent: Readonly<Record<string, string>>,
): WidgetEventContext | string {
  switch (event) {
    case 'move': {
      const to = sent._to;
      if (to === undefined || to === '') return 'Nothing was changed: choose a column.';
      // Columns of a column entity are its records: the store checks the reference.
      if (!widget.columnEntity && widget.columns && !widget.columns.some((c) => c.value === to))
        return 'Nothing was changed: no such column.';
      return { to: { id: to, value: to }, index: 0 };
    }
    case 'toggle': {
      const field = widget.card.toggles?.find((t) => t.field === sent._field)?.field;
      return field === undefined ? 'Nothing was changed: no such toggle.' : { field };
    }
    case 'edit':
      return sent._value ? { field: widget.card.title, value: sent._value } : 'Nothing was changed: give a value.';
    case 'column_rename':
      return sent._value ? { field: widget.columnLabel, value: sent._value } : 'Nothing was changed: give a name.';
  }
}
