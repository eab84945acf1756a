// `layout = "dashboard"`: each query of the page as its own section, headed by the query's name.

import { html, type Html } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import { recordTable } from './record-table.ts';
import { humanize } from './values.ts';

export function dashboardLayout(view: LayoutContext): Html {
  const sections = view.page.queries.map((query) => {
    const result = view.results[query.name];
    const table = recordTable(view.entity(result.entity), result.records, view.links);
    return html`<h2>${humanize(query.name)}</h2>\n${table}`;
  });
  return html`${sections}`;
}
