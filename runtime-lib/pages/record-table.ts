// Records as a table, the way list and dashboard pages and a detail page's related records show
// them: a column per field that some record shows this viewer (long text and JSON are left to the
// detail page), the first linking to the record's own page where there is one.

import type { Row } from '../data/database.ts';
import type { EntitySpec } from '../data/entity-store.ts';
import type { FieldSpec } from '../data/fields.ts';
import { html, type Html } from './html.ts';
import { humanize, type RecordLinks, showValue } from './values.ts';

const LEFT_TO_DETAIL = new Set(['LongText', 'JSON']);

/** `omit`: a field every record shares, said by where the table stands (a relation's key). */
export function recordTable(spec: EntitySpec, records: readonly Row[], links: RecordLinks, omit?: string): Html {
  if (records.length === 0) return html`<p class="none">Nothing to show.</p>\n`;
  const shown = (f: FieldSpec) => !f.primaryKey && !LEFT_TO_DETAIL.has(f.type) && f.name !== omit;
  let columns = spec.fields.filter((f) => shown(f) && records.some((r) => Object.hasOwn(r, f.name)));
  // Every field hidden or long: the key, at least, names the record.
  if (columns.length === 0) columns = spec.fields.filter((f) => f.primaryKey);
  const link = links.get(spec.name);
  const key = spec.primaryKey;
  const cell = (record: Row, field: FieldSpec, first: boolean): Html => {
    const value = showValue(field, record[field.name], links);
    return first && link && record[key] !== undefined ? html`<a href="${link(record[key])}">${value}</a>` : value;
  };
  const head = columns.map((f) => html`<th scope="col">${humanize(f.name)}</th>`);
  const rows = records.map((r) => html`<tr>${columns.map((f, i) => html`<td>${cell(r, f, i === 0)}</td>`)}</tr>\n`);
  return html`<div class="table"><table>
<thead><tr>${head}</tr></thead>
<tbody>
${rows}</tbody>
</table></div>
`;
}
