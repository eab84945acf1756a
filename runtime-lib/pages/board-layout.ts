// `layout = "board"`: the records of the board's query in columns by `groupBy`, in the declared
// order of the columns; a record whose value is no declared column's is shown in a last column,
// "Other", so that nothing the viewer may read is hidden. Each card shows its title, description
// and fields (`relation.field` through the query's include) and links to `card.href` or to the
// record's page. With `move`, each card has a small form "Move to: [column] Move" that starts
// `move.workflow`: refused, with nothing started, when the record is no longer in the column the
// page showed, or when the workflow's checks refuse.

import { AppError } from '../core/errors.ts';
import type { RecordKey } from '../core/ids.ts';
import type { Row } from '../data/database.ts';
import type { EntityStore } from '../data/entity-store.ts';
import { requestContext } from '../http/context.ts';
import type { ActionPages } from './command-actions.ts';
import { html, type Html } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import type { PageRequest } from './page-routes.ts';
import type { BoardSpec, PageWorkflows } from './page-spec.ts';
import { leaveFlash, redirect } from './page-view.ts';
import { fillHref, readScoped } from './record-templates.ts';
import { humanize } from './values.ts';

/** A column's value as the board compares it: text (an Enum's value, a text field's). */
function columnOf(value: unknown): string {
  return value === undefined || value === null ? '' : String(value);
}

export function boardLayout(view: LayoutContext): Html {
  const board = view.page.board as BoardSpec;
  const result = view.results[board.query];
  const spec = view.entity(result.entity);
  const key = spec.primaryKey;
  const declared = new Set(board.columns.map((c) => c.value));
  const records = sortedBy(result.records, board.orderBy);
  const columns: Array<{ value?: string; label: string; description?: string; cards: Row[] }> = board.columns.map(
    (c) => ({ ...c, cards: records.filter((r) => columnOf(r[board.groupBy]) === c.value) }),
  );
  const others = records.filter((r) => !declared.has(columnOf(r[board.groupBy])));
  if (others.length) columns.push({ label: 'Other', cards: others });
  const link = view.links.get(result.entity);
  const card = (record: Row): Html => {
    const scope = { record, params: {} };
    const title = String(readScoped(scope, board.card.title) ?? record[key] ?? '');
    const href = board.card.href
      ? fillHref(board.card.href, scope)
      : link && record[key] !== undefined
        ? link(record[key])
        : undefined;
    const description = board.card.description && readScoped(scope, board.card.description);
    const fields = board.card.fields.map(
      (path) => html`<dt>${humanize(path.replace(/\./g, ' '))}</dt><dd>${shown(readScoped(scope, path))}</dd>`,
    );
    const from = columnOf(record[board.groupBy]);
    const targets = board.columns.filter((c) => c.value !== from);
    const id = `move-${String(record[key])}`;
    const move =
      board.move && record[key] !== undefined && targets.length
        ? html`<form method="post" class="move">
${view.csrfToken ? html`<input type="hidden" name="_csrf" value="${view.csrfToken}">\n` : ''}\
<input type="hidden" name="_action" value="move">
<input type="hidden" name="_id" value="${String(record[key])}">
<input type="hidden" name="_from" value="${from}">
<label for="${id}">Move to</label>
<select id="${id}" name="_to">${targets.map((c) => html`<option value="${c.value}">${c.label}</option>`)}</select>
<button type="submit" class="secondary">Move</button>
</form>
`
        : '';
    return html`<li class="card">
<h3>${href ? html`<a href="${href}">${title}</a>` : title}</h3>
${description ? html`<p>${shown(description)}</p>\n` : ''}${fields.length ? html`<dl>${fields}</dl>\n` : ''}${move}</li>
`;
  };
  const parts = columns.map(
    (c) => html`<section class="column" aria-label="${c.label}">
<h2>${c.label} <span class="count">${c.cards.length}</span></h2>
${c.description ? html`<p class="none">${c.description}</p>\n` : ''}\
${cardList(c.cards.map(card))}</section>
`,
  );
  return html`<div class="board">\n${parts}</div>\n`;
}

/** A column's cards, or a word that it has none. */
export function cardList(cards: readonly Html[]): Html {
  return cards.length ? html`<ul class="cards">\n${cards}</ul>\n` : html`<p class="none">Nothing here.</p>\n`;
}

function shown(value: unknown): string {
  if (value === undefined || value === null) return '—';
  if (Array.isArray(value)) return value.map(shown).join(', ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Ascending by `field` (numbers as numbers, the rest as text), the query's order kept among equals. */
function sortedBy(records: readonly Row[], field: string | undefined): Row[] {
  if (!field) return [...records];
  const rank = (v: unknown) => (v === undefined || v === null ? 1 : 0);
  return [...records].sort((a, b) => {
    const x = a[field];
    const y = b[field];
    if (rank(x) || rank(y)) return rank(x) - rank(y);
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return String(x).localeCompare(String(y));
  });
}

/**
 * POST `_action=move`: card `_id` from column `_from` to `_to`, by starting `move.workflow` with
 * the record and the target column (`payload[payloadField ?? groupBy]`), as the viewer.
 */
export async function boardMove(
  workflows: PageWorkflows | undefined,
  pr: PageRequest,
  sent: Readonly<Record<string, string>>,
  pages: ActionPages,
): Promise<void> {
  const board = pr.page.board;
  const move = board?.move;
  const query = board && pr.page.queries.find((q) => q.name === board.query);
  if (!board || !move || !query || !workflows) throw new AppError('VALIDATION_FAILED', 'this page has no such action');
  const to = board.columns.find((c) => c.value === sent._to);
  const store = pr.site.stores.get(query.entity) as EntityStore;
  const refuse = (status: number, text: string) => pages.render(pr, { status, flash: { kind: 'error', text } });
  if (!to || sent._id === undefined || sent._from === undefined)
    return refuse(400, 'The card was not moved: choose one of the columns of this board.');
  const ctx = requestContext(pr.req, { mutation: true });
  let title = 'The card';
  try {
    await workflows.submit(ctx, move.workflow, function* () {
      const record = yield* store.get(ctx, sent._id as RecordKey);
      title = String(readScoped({ record, params: {} }, board.card.title) ?? title);
      const from = columnOf(record[board.groupBy]);
      if (from !== sent._from) {
        const was = board.columns.find((c) => c.value === from)?.label ?? (from || 'another column');
        throw new AppError(
          'STATE_CONFLICT',
          `${title} was not moved: it is in "${was}" now, not where the page showed it. Look at the board again.`,
        );
      }
      if (from === to.value) throw new AppError('STATE_CONFLICT', `${title} is in "${to.label}" already.`);
      const payload = { [move.payloadField ?? board.groupBy]: to.value };
      return {
        params: pr.params,
        payload,
        body: payload,
        entity: query.entity,
        recordId: record[store.spec.primaryKey] ?? null,
        record,
        from,
        to: to.value,
        page: pr.page.path,
      };
    });
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    if (err.code === 'NOT_FOUND') return refuse(404, 'The card was not moved: it is not on this board any more.');
    const text =
      err.code === 'STATE_CONFLICT' ? err.message : (move.errorMessage ?? `${title} was not moved: ${err.message}.`);
    return refuse(err.status, text);
  }
  leaveFlash(pages.site, pr.res, {
    kind: 'success',
    text: move.successMessage ?? `${title}: moving to "${to.label}".`,
  });
  redirect(pr.res, (pr.req.url ?? '/').split('?')[0]);
}
