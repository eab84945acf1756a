// `layout = "list"`: the first query's records as a table, a page of them at a time, each linked
// to its record's page; `?page=N` moves on (GET, so every page of the list is a link).

import { html, type Html } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import { slotEntity } from './page-templates.ts';
import { recordTable } from './record-table.ts';

export function listLayout(view: LayoutContext): Html {
  const query = view.page.queries[0];
  const result = query && view.results[query.name];
  if (!result) return html`<p class="none">Nothing to show.</p>`;
  const spec = view.entity(result.entity);
  const previous = view.skip > 0 ? html`<a rel="prev" href="${view.pageHref(view.skip - 1)}">Previous</a>` : '';
  const next = result.hasMore ? html`<a rel="next" href="${view.pageHref(view.skip + 1)}">Next</a>` : '';
  const pager = previous || next ? html`<nav class="pager" aria-label="Pagination">${previous}${next}</nav>\n` : '';
  // The page's layoutSlots, where it has them (Zebric's list slots and what each is given).
  const entity = view.slot && slotEntity(spec);
  const header = view.slot?.('list.header', { entity }) ?? '';
  const body =
    (result.records.length === 0
      ? view.slot?.('list.empty', { entity })
      : view.slot?.('list.body', { entity, items: result.records })) ?? recordTable(spec, result.records, view.links);
  return html`${header}${body}${pager}`;
}
