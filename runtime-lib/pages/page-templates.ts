// A served page's own templates: its `template`, which renders the page in place of the layout, and
// its `layoutSlots`, which render parts of a layout. What they are given (template-context.ts):
// the page, its query results as Zebric's `data` (each query's records, as this viewer may read
// them: the same rows the layout shows), the path's and the query string's parameters, the viewer
// and the CSRF token of the page's forms.

import type { EntitySpec } from '../data/entity-store.ts';
import type { ApiRequest } from '../http/request.ts';
import { type Html, trusted } from './html.ts';
import type { QueryResult } from './page-queries.ts';
import type { PageSpec } from './page-spec.ts';
import { renderSlot, type SlotName, type TemplateInput } from './template-context.ts';

export function pageTemplateInput(
  page: PageSpec,
  results: Readonly<Record<string, QueryResult>>,
  req: ApiRequest,
  params: Readonly<Record<string, string>>,
  csrfToken: string,
): TemplateInput {
  const query = Object.fromEntries(new URLSearchParams((req.url ?? '').split('?')[1] ?? ''));
  return {
    page: { path: page.path, title: page.title, layout: page.layout, auth: page.auth },
    data: Object.fromEntries(Object.entries(results).map(([name, result]) => [name, result.records])),
    params,
    query,
    actor: req.actor,
    csrfToken,
  };
}

/** A layout's slot: the page's template of it rendered (`slot` is Zebric's `renderer.slot`), else undefined. */
export type SlotRenderer = (name: SlotName, slot: Readonly<Record<string, unknown>>) => Html | undefined;

/** The page's slot renderer, or undefined when it replaces no slot. */
export function slotRenderer(page: PageSpec, input: TemplateInput): SlotRenderer | undefined {
  if (!page.slots) return undefined;
  return (name, slot) => {
    const out = renderSlot(page.slots, name, { ...input, slot });
    return out === undefined ? undefined : trusted(out);
  };
}

/** An entity as a slot's `entity`: its name and its fields' names and types. */
export function slotEntity(spec: EntitySpec): Record<string, unknown> {
  return { name: spec.name, fields: spec.fields.map((f) => ({ name: f.name, type: f.type })) };
}
