// The blueprint's pages as the generator writes them into src/pages.ts: plain data, checked at
// generate time (every entity, field, relation, command and workflow named here exists).

import type { IncludeSpec } from '../commands/executor.ts';
import type { PageFormSpec } from './form-spec.ts';
import type { CompiledTemplate, SlotName } from './template-context.ts';

/** A query of a page: the records of `entity` the viewer may read, filtered, ordered and paged. */
export interface PageQuerySpec {
  name: string;
  entity: string;
  /**
   * Equalities, in the blueprint's order. A value is a literal, or a string naming where it comes
   * from: `$params.<name>` (the page path's parameter) or `$currentUser.<key>` (the viewer).
   */
  where?: ReadonlyArray<{ field: string; value: unknown }>;
  orderBy?: ReadonlyArray<{ field: string; direction: 'asc' | 'desc' }>;
  limit?: number;
  offset?: number;
  /** Relations loaded with each record, through their own entity's read rules. */
  include?: readonly IncludeSpec[];
}

/** A command a detail page offers on its record, as the blueprint labels it. */
export interface PageCommandSpec {
  name: string;
  operationId: string;
  label: string;
  style?: 'primary' | 'secondary' | 'danger' | 'ghost';
  confirm?: string;
}

export interface PageSpec {
  /** Express form: `/tickets/:id`. */
  path: string;
  title: string;
  auth: 'required' | 'optional' | 'none';
  layout: string;
  queries: readonly PageQuerySpec[];
  /** Detail pages: the commands of the first query's entity, offered where policy and availableWhen pass. */
  commands?: readonly PageCommandSpec[];
  /** `actionBar.statusField` and its label: the record's state, shown by the heading. */
  status?: { field: string; label?: string };
  /** `layout = "form"`: the form that creates, updates or deletes a record (form-spec.ts). */
  form?: PageFormSpec;
  /** The blueprint's own template: it renders the page in place of the layout. */
  template?: CompiledTemplate;
  /** `layoutSlots`: templates that render parts of the layout in place of its own. */
  slots?: Readonly<Partial<Record<SlotName, CompiledTemplate>>>;
}
