// What a layout renders from: the page, its query results for this viewer, and how to link.

import type { EntitySpec } from '../data/entity-store.ts';
import type { Html } from './html.ts';
import type { QueryResult } from './page-queries.ts';
import type { PageSpec } from './page-spec.ts';
import type { SlotRenderer } from './page-templates.ts';
import type { RecordLinks } from './values.ts';

export interface LayoutContext {
  page: PageSpec;
  results: Readonly<Record<string, QueryResult>>;
  /** The declared shape of an entity (its fields in order). */
  entity(name: string): EntitySpec;
  links: RecordLinks;
  /** Which page of the first query this is (0: the first). */
  skip: number;
  /** The URL of another page of the first query. */
  pageHref(skip: number): string;
  /** Detail pages: the commands this viewer may run on the record, as forms. */
  commands?: Html;
  /** Form pages: the form, for this viewer (form-layout.ts). */
  form?: Html;
  /** The page's `layoutSlots`: a slot's HTML where the page replaces it, else undefined (the layout's own). */
  slot?: SlotRenderer;
  /** The session's CSRF token, for the forms a layout posts back (a board's moves, a widget's events). */
  csrfToken?: string;
}
