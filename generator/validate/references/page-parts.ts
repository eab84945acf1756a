// Cross-reference rules of the parts of a page: form fields (optionsFrom, lookup), the action
// bar, the board and the widget, and the internal links they hold. Zebric's loader checks the
// board, optionsFrom and the links; the rest are names that must resolve like any other.
// They read the page as written (the model keeps only what generation will need), so each
// report points at the entry it is about.

import { fileInputOffField } from '../../model/pages.ts';
import type { CompileContext } from '../../context.ts';
import { list, namedSections, strList, table, type Raw } from '../../model/raw.ts';
import type { Blueprint, Entity, Page } from '../../model/types.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { checkCondition } from '../declarations/conditions.ts';
import { entityNamed, fieldNamed, names, unknownEntity, unknownField } from './common.ts';

/** The page as written (page `queries` already folded into `query` by the parser). */
function written(ctx: CompileContext, page: Page): Raw {
  return namedSections(ctx.parsed, 'page').find((s) => s.name === page.route)?.value ?? {};
}

/** The entity of a page query, or undefined (reported as UNKNOWN_QUERY when `report` is given). */
function queryEntity(ctx: CompileContext, bp: Blueprint, page: Page, name: string, at?: KeyPath): Entity | undefined {
  const query = page.queries.find((q) => q.name === name);
  if (!query && at) {
    const queries = page.queries.map((q) => q.name);
    ctx.report('UNKNOWN_QUERY', at, `page "${page.route}" has no query "${name}"`, {
      hint:
        didYouMean(name, queries) ??
        (queries.length ? `its queries: ${queries.join(', ')}` : 'declare it under [page."<path>".query.<name>]'),
    });
  }
  return query && entityNamed(bp, query.entity);
}

function checkField(ctx: CompileContext, entity: Entity | undefined, at: KeyPath, name: unknown): void {
  if (entity && typeof name === 'string' && !fieldNamed(entity, name)) unknownField(ctx, entity, at, name);
}

function checkWorkflow(ctx: CompileContext, bp: Blueprint, at: KeyPath, name: unknown): void {
  if (typeof name === 'string' && !bp.workflows.some((w) => w.name === name)) {
    ctx.report('UNKNOWN_WORKFLOW', at, `workflow "${name}" does not exist`, {
      hint: didYouMean(name, names(bp.workflows)),
    });
  }
}

/** The named entity, reported when it does not exist. */
function entityAt(ctx: CompileContext, bp: Blueprint, at: KeyPath, name: unknown): Entity | undefined {
  if (typeof name !== 'string') return undefined;
  const entity = entityNamed(bp, name);
  if (!entity) unknownEntity(ctx, bp, at, name);
  return entity;
}

/** A lookup control's entity, searched fields and filter keys (a form field's block or a lookup widget). */
function lookupReferences(ctx: CompileContext, bp: Blueprint, at: KeyPath, lookup: Raw): Entity | undefined {
  const entity = entityAt(ctx, bp, [...at, 'entity'], lookup.entity);
  list(lookup.search).forEach((f, i) => checkField(ctx, entity, [...at, 'search', i], f));
  for (const key of Object.keys(table(lookup.filter))) checkField(ctx, entity, [...at, 'filter', key], key);
  return entity;
}

export function formReferences(ctx: CompileContext, bp: Blueprint, page: Page): void {
  if (!page.form) return;
  const at: KeyPath = [...page.path, 'form'];
  const formEntity = entityNamed(bp, page.form.entity);
  if (!formEntity) unknownEntity(ctx, bp, [...at, 'entity'], page.form.entity);
  list(table(written(ctx, page).form).fields).forEach((f, i) => {
    if (!isTable(f)) return;
    const fieldAt: KeyPath = [...at, 'fields', i];
    checkField(ctx, formEntity, [...fieldAt, 'name'], f.name);
    if (fileInputOffField(formEntity, f)) {
      const type = formEntity?.fields.find((x) => x.name === f.name)?.type;
      ctx.report(
        'FORM_FILE_NOT_STORED',
        [...fieldAt, 'type'],
        `form field "${String(f.name)}" is a file input, but ${formEntity?.name}.${String(f.name)} is ${type}, ` +
          'not a file field: bp stores uploads only in file fields, so the form leaves this input out',
        {
          severity: 'warning',
          hint: `declare the field as { name = "${String(f.name)}", type = "file" } to upload to it`,
        },
      );
    }
    if (isTable(f.optionsFrom) && typeof f.optionsFrom.query === 'string') {
      const source = queryEntity(ctx, bp, page, f.optionsFrom.query, [...fieldAt, 'optionsFrom', 'query']);
      checkField(ctx, source, [...fieldAt, 'optionsFrom', 'value'], f.optionsFrom.value ?? 'id');
      checkField(ctx, source, [...fieldAt, 'optionsFrom', 'label'], f.optionsFrom.label);
    }
    if (isTable(f.lookup)) lookupReferences(ctx, bp, [...fieldAt, 'lookup'], f.lookup);
  });
}

export function actionBarReferences(ctx: CompileContext, bp: Blueprint, page: Page): void {
  const bar = table(written(ctx, page).actionBar);
  for (const group of ['actions', 'secondaryActions'] as const) {
    list(bar[group]).forEach((a, i) => {
      if (!isTable(a)) return;
      const at: KeyPath = [...page.path, 'actionBar', group, i];
      checkWorkflow(ctx, bp, [...at, 'workflow'], a.workflow);
      // Checked on the page's record and the viewer when the page is shown and when it is posted.
      for (const key of ['visibleWhen', 'enabledWhen'])
        if (isTable(a[key])) checkCondition(ctx, [...at, key], a[key], ['actor', 'record']);
    });
  }
}

export function boardReferences(ctx: CompileContext, bp: Blueprint, page: Page): void {
  const board = written(ctx, page).board;
  if (!isTable(board)) return;
  const at: KeyPath = [...page.path, 'board'];
  const entity =
    typeof board.query === 'string' ? queryEntity(ctx, bp, page, board.query, [...at, 'query']) : undefined;
  const card = table(board.card);
  // A path's first segment is a field; a dotted path reads a field of what it refers to.
  const root = (p: unknown) => (typeof p === 'string' ? p.split('.')[0] : undefined);
  checkField(ctx, entity, [...at, 'groupBy'], root(board.groupBy));
  checkField(ctx, entity, [...at, 'orderBy'], root(board.orderBy));
  checkField(ctx, entity, [...at, 'card', 'title'], root(card.title));
  checkField(ctx, entity, [...at, 'card', 'description'], root(card.description));
  strList(card.fields).forEach((p, i) => {
    const fieldAt: KeyPath = [...at, 'card', 'fields', i];
    const [first, nested] = p.split('.');
    if (nested === undefined) return checkField(ctx, entity, fieldAt, first);
    const relation = entity?.relations.find((r) => r.name === first);
    if (entity && !relation) {
      ctx.report('UNKNOWN_RELATION', fieldAt, `entity "${entity.name}" has no relation "${first}"`, {
        hint: didYouMean(first, names(entity.relations)),
      });
    }
    checkField(ctx, relation && entityNamed(bp, relation.entity), fieldAt, nested);
  });
  checkWorkflow(ctx, bp, [...at, 'move', 'workflow'], table(board.move).workflow);
}

const WIDGET_EVENTS = ['on_move', 'on_edit', 'on_column_rename', 'on_toggle', 'on_select'];

export function widgetReferences(ctx: CompileContext, bp: Blueprint, page: Page): void {
  const widget = written(ctx, page).widget;
  if (!isTable(widget)) return;
  const at: KeyPath = [...page.path, 'widget'];
  // A page bp cannot render is refused here, never served blank.
  if (typeof widget.kind === 'string' && widget.kind !== 'board') {
    ctx.report(
      'WIDGET_NOT_RENDERED',
      [...at, 'kind'],
      `bp renders widgets of kind "board" only, not "${widget.kind}"`,
      {
        hint:
          widget.kind === 'lookup'
            ? 'pick records with a form field of type "lookup", or show them on a list page'
            : 'use kind = "board", or a list, detail, dashboard or board layout',
      },
    );
  }
  const entity = lookupReferences(ctx, bp, at, widget);
  const columns = entityAt(ctx, bp, [...at, 'column_entity'], widget.column_entity);
  checkField(ctx, entity, [...at, 'group_by'], widget.group_by);
  checkField(ctx, entity, [...at, 'rank_field'], widget.rank_field);
  checkField(ctx, columns, [...at, 'column_label'], widget.column_label);
  checkField(ctx, columns, [...at, 'column_order'], widget.column_order);
  const card = table(widget.card);
  checkField(ctx, entity, [...at, 'card', 'title'], card.title);
  list(card.toggles).forEach((t, i) => checkField(ctx, entity, [...at, 'card', 'toggles', i, 'field'], table(t).field));
  for (const event of WIDGET_EVENTS) checkWorkflow(ctx, bp, [...at, event, 'workflow'], table(widget[event]).workflow);
}

/**
 * Internal links (action hrefs and redirects, a form's success redirect) must lead to a page, as
 * Zebric's loader requires: `:x` and `{x}` segments match any segment, the query string is left out.
 */
export function routeLinks(ctx: CompileContext, bp: Blueprint): void {
  const routes = bp.pages.map((p) => segments(p.route));
  const check = (at: KeyPath, link: unknown) => {
    if (typeof link !== 'string' || !link.startsWith('/')) return;
    const wanted = segments(link);
    if (wanted.length === 0 || routes.some((r) => sameRoute(wanted, r))) return;
    ctx.report('UNKNOWN_ROUTE', at, `no page serves "${link}"`, {
      hint: didYouMean(
        link.split('?')[0],
        bp.pages.map((p) => p.route),
      ),
    });
  };
  for (const page of bp.pages) {
    const raw = written(ctx, page);
    check([...page.path, 'form', 'onSuccess', 'redirect'], table(table(raw.form).onSuccess).redirect);
    const bar = table(raw.actionBar);
    for (const group of ['actions', 'secondaryActions'] as const) {
      list(bar[group]).forEach((a, i) => {
        check([...page.path, 'actionBar', group, i, 'href'], table(a).href);
        check([...page.path, 'actionBar', group, i, 'redirect'], table(a).redirect);
      });
    }
  }
}

/** A route's segments, `undefined` for a dynamic one (`:id`, `{id}`). */
function segments(route: string): Array<string | undefined> {
  const trimmed = route.split('?')[0].replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return [];
  return trimmed.split('/').map((s) => (s.startsWith(':') || (s.startsWith('{') && s.endsWith('}')) ? undefined : s));
}

function sameRoute(a: Array<string | undefined>, b: Array<string | undefined>): boolean {
  return a.length === b.length && a.every((s, i) => s === undefined || b[i] === undefined || s === b[i]);
}
