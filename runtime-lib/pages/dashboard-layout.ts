// `layout = "dashboard"`: each query of the page as its own section, headed by the query's name.

import { html, type Html } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import { recordTable } from './record-table.ts';
import { SafeHtml } from './template-context.ts';
import { humanize } from './values.ts';

export function dashboardLayout(view: LayoutContext): Html {
  const sections = view.page.queries.map((query) => {
    const result = view.results[query.name];
    const table = recordTable(view.entity(result.entity), result.records, view.links);
    return html`<h2>${humanize(query.name)}</h2>\n${table}`;
  });
  // The page's `dashboard.widgets` slot, where it has one: the built-in sections (HTML) and the data.
  const data = view.slot && Object.fromEntries(Object.entries(view.results).map(([n, r]) => [n, r.records]));
  return (
    view.slot?.('dashboard.widgets', { widgets: sections.map((s) => new SafeHtml(s.text)), data }) ?? html`${sections}`
  );
}
