// The parts of a page spec (runtime-lib/pages/page-spec.ts) for action bars, boards and widgets:
// plain data the page router renders and posts back to (action-bar.ts, board-layout.ts,
// widget-layout.ts). Validation checked every name; Zebric's defaults are filled in here.

import type { ActionBarAction, Entity, Page, PageQuery } from '../model/types.ts';
import { nonEmpty } from './ts-literal.ts';

const WIDGET_EVENTS = ['move', 'toggle', 'edit', 'column_rename'] as const;

/** The spec's `layout`, `actionBar`, `board` and `widget`, and the queries a widget reads. */
export function boardParts(page: Page): Record<string, unknown> {
  return {
    actionBar: page.actionBar && actionBarSpec(page.actionBar),
    board: page.layout === 'board' && page.board ? boardSpec(page.board) : undefined,
    widget: page.widget ? widgetSpec(page.widget) : undefined,
  };
}

/**
 * The field whose value the action bar shows as the record's status: `statusField`, or, as in
 * Zebric, the entity's `status` field when the page has an action bar that names none; none with
 * `showStatus = false`.
 */
export function statusField(page: Page, entity: Entity | undefined): string | undefined {
  const bar = page.actionBar;
  if (!bar || !bar.showStatus) return undefined;
  return bar.statusField ?? (entity?.fields.some((f) => f.name === 'status') ? 'status' : undefined);
}

/** A widget page is rendered by the widget, whatever its `layout` says. */
export function servedLayout(page: Page): string {
  return page.widget ? 'widget' : page.layout;
}

/**
 * The queries a widget page runs: the page's own, then one of the widget's entity and one of its
 * column entity where the page has none (Zebric shows no cards then; bp reads them, as the viewer).
 */
export function widgetQueries(page: Page): PageQuery[] {
  const widget = page.widget;
  if (!widget) return page.queries;
  const out = [...page.queries];
  for (const entity of [widget.entity, widget.column_entity]) {
    if (typeof entity === 'string' && !out.some((q) => q.entity === entity))
      out.push({ name: entity, entity, where: {}, orderBy: [], include: [] });
  }
  return out;
}

function actionSpec(a: ActionBarAction): Record<string, unknown> {
  return {
    label: a.label,
    href: a.workflow ? undefined : a.href,
    target: a.target,
    style: a.style,
    icon: a.icon,
    confirm: a.confirm,
    workflow: a.workflow,
    payload: Object.keys(a.payload).length ? a.payload : undefined,
    visibleWhen: a.visibleWhen,
    enabledWhen: a.enabledWhen,
    redirect: a.redirect,
    successMessage: a.successMessage,
    errorMessage: a.errorMessage,
  };
}

function actionBarSpec(bar: NonNullable<Page['actionBar']>): Record<string, unknown> | undefined {
  if (!bar.title && !bar.description && bar.actions.length === 0 && bar.secondaryActions.length === 0) return undefined;
  return {
    title: bar.title,
    description: bar.description,
    actions: bar.actions.map(actionSpec),
    secondaryActions: bar.secondaryActions.map(actionSpec),
  };
}

function boardSpec(board: NonNullable<Page['board']>): Record<string, unknown> {
  return {
    query: board.query,
    groupBy: board.groupBy,
    orderBy: board.orderBy,
    columns: board.columns.map((c) => ({ value: c.value, label: c.label, description: c.description })),
    card: {
      title: board.card.title,
      description: board.card.description,
      href: board.card.href,
      fields: board.card.fields,
    },
    move: board.move && {
      workflow: board.move.workflow,
      payloadField: board.move.payloadField,
      successMessage: board.move.successMessage,
      errorMessage: board.move.errorMessage,
    },
  };
}

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const table = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** A board widget, with Zebric's defaults (`columnId`, `name`, `position`, `title`). */
function widgetSpec(widget: Record<string, unknown>): Record<string, unknown> {
  const card = table(widget.card);
  const columns = Array.isArray(widget.columns) ? widget.columns.map(table) : undefined;
  const events: Record<string, unknown> = {};
  for (const event of WIDGET_EVENTS) {
    const handler = table(widget[`on_${event}`]);
    const update = Object.keys(table(handler.update)).length ? table(handler.update) : undefined;
    if (update || text(handler.workflow)) events[event] = { update, workflow: text(handler.workflow) };
  }
  return {
    kind: 'board',
    entity: text(widget.entity),
    groupBy: text(widget.group_by) ?? 'columnId',
    columns: columns?.map((c) => ({
      value: String(c.value),
      label: String(c.label),
      description: text(c.description),
    })),
    columnEntity: text(widget.column_entity),
    columnLabel: text(widget.column_label) ?? 'name',
    columnOrder: text(widget.column_order) ?? 'position',
    rankField: text(widget.rank_field) ?? 'position',
    card: {
      title: text(card.title) ?? 'title',
      subtitle: text(card.subtitle),
      meta: nonEmpty(Array.isArray(card.meta) ? card.meta.filter((m): m is string => typeof m === 'string') : []),
      href: text(card.href),
      toggles: nonEmpty(
        (Array.isArray(card.toggles) ? card.toggles.map(table) : []).map((t) => ({
          field: String(t.field),
          label: text(t.label),
          labelOn: text(t.label_on),
          labelOff: text(t.label_off),
        })),
      ),
    },
    events,
  };
}
