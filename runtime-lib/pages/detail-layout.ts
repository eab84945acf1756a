// `layout = "detail"`: the first query's record, every field this viewer may read, its included
// relations, the commands this viewer may run on it, then the page's other queries.

import type { Row } from '../data/database.ts';
import type { EntitySpec } from '../data/entity-store.ts';
import { html, type Html } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import { slotEntity } from './page-templates.ts';
import { recordTable } from './record-table.ts';
import { humanize, type RecordLinks, showValue } from './values.ts';

export function detailLayout(view: LayoutContext): Html {
  const [first, ...others] = view.page.queries;
  const result = view.results[first.name];
  const record = result.records[0];
  const spec = view.entity(result.entity);
  const status = view.page.status;
  const badge =
    status && Object.hasOwn(record, status.field)
      ? html`<p>${status.label ?? humanize(status.field)}: \
<span class="status">${String(record[status.field])}</span></p>\n`
      : '';
  const included = (first.include ?? []).map((inc) => {
    const related = record[inc.name];
    const target = view.entity(inc.entity);
    const body = Array.isArray(related)
      ? recordTable(target, related as Row[], view.links, inc.foreignKey)
      : related
        ? html`<section>${recordFields(target, related as Row, view.links)}</section>\n`
        : html`<p class="none">None.</p>\n`;
    return html`<h2>${humanize(inc.name)}</h2>\n${body}`;
  });
  const rest = others.map((query) => {
    const other = view.results[query.name];
    return html`<h2>${humanize(query.name)}</h2>\n${recordTable(view.entity(other.entity), other.records, view.links)}`;
  });
  // The page's layoutSlots, where it has them: `detail.main` the record, `detail.related` what follows it.
  const entity = view.slot && slotEntity(spec);
  const main =
    view.slot?.('detail.main', { record, entity }) ??
    html`${badge}<section aria-label="${humanize(spec.name)}">${recordFields(spec, record, view.links)}</section>
${included}`;
  const data = view.slot && Object.fromEntries(Object.entries(view.results).map(([n, r]) => [n, r.records]));
  const related = view.slot?.('detail.related', { entity, data }) ?? html`${rest}`;
  return html`${main}${view.commands ?? ''}${related}`;
}

/** A record's fields as a definition list, in the entity's order; those hidden from the viewer are absent. */
export function recordFields(spec: EntitySpec, record: Row, links: RecordLinks): Html {
  const shown = spec.fields.filter((f) => Object.hasOwn(record, f.name));
  const items = shown.map((f) => html`<dt>${humanize(f.name)}</dt><dd>${showValue(f, record[f.name], links)}</dd>\n`);
  return html`<dl>\n${items}</dl>`;
}
