// How a record's values read on a page: labels from field names, each value by its field's type,
// links to the records of other entities where a page shows them.

import type { FieldSpec } from '../data/fields.ts';
import { html, type Html } from './html.ts';

/** `createdAt` reads "Created at"; `customer_id` "Customer id". */
export function humanize(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Where each entity's records are shown one at a time: `/tickets/:id` gives `/tickets/<id>`. */
export type RecordLinks = ReadonlyMap<string, (id: unknown) => string>;

export function showValue(field: FieldSpec | undefined, value: unknown, links: RecordLinks): Html {
  if (value === undefined || value === null || value === '') return html`<span class="none">—</span>`;
  switch (field?.type) {
    case 'Boolean':
      return html`${value ? 'Yes' : 'No'}`;
    case 'DateTime': {
      const text = String(value)
        .replace('T', ' ')
        .replace(/\.\d+Z$|Z$/, ' UTC');
      return html`<time datetime="${String(value)}">${text}</time>`;
    }
    case 'JSON':
      return html`<code>${JSON.stringify(value)}</code>`;
    case 'Ref': {
      const link = field.ref ? links.get(field.ref.entity) : undefined;
      return link ? html`<a href="${link(value)}">${String(value)}</a>` : html`${String(value)}`;
    }
    case 'file':
      // A stored file's URL (/uploads/<name>): served only to those who may read this field.
      return typeof value === 'string' && value.startsWith('/uploads/')
        ? html`<a href="${value}">${value.slice('/uploads/'.length)}</a>`
        : html`${String(value)}`;
    default:
      return html`${typeof value === 'object' ? JSON.stringify(value) : String(value)}`;
  }
}
