// The blueprint's pages as the generator writes them into src/pages.ts: plain data, checked at
// generate time (every entity, field, relation, command and workflow named here exists).

import type { IncludeSpec } from '../commands/executor.ts';
import type { PageFormSpec } from './form-spec.ts';
import type { CompiledTemplate, SlotName } from './template-context.ts';
import type { Work } from '../data/database.ts';
import type { RequestContext } from '../data/entity-store.ts';

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
  /** `actionBar`'s heading and actions (action-bar.ts). */
  actionBar?: ActionBarSpec;
  /** `layout = "board"` (board-layout.ts). */
  board?: BoardSpec;
  /** A `widget` page (widget-layout.ts). */
  widget?: WidgetSpec;
}

/**
 * An action bar action: a link (`href`, `:field` / `{field}` filled from the page's record), or a
 * button that starts `workflow` with `payload` (its strings' `{{field}}` filled from the record).
 */
export interface PageActionSpec {
  label: string;
  href?: string;
  target?: '_self' | '_blank';
  style?: 'primary' | 'secondary' | 'danger' | 'ghost';
  /** A symbol or emoji shown before the label; the name of an icon font's icon is not shown (bp has none). */
  icon?: string;
  confirm?: string;
  workflow?: string;
  payload?: Readonly<Record<string, unknown>>;
  /** Conditions on the page's record (rules/conditions.ts): hidden unless it holds; disabled unless it holds. */
  visibleWhen?: Readonly<Record<string, unknown>>;
  enabledWhen?: Readonly<Record<string, unknown>>;
  redirect?: string;
  successMessage?: string;
  errorMessage?: string;
}

/** `actionBar`: a heading part above the page (its status is PageSpec.status) and its actions. */
export interface ActionBarSpec {
  title?: string;
  description?: string;
  actions: readonly PageActionSpec[];
  secondaryActions: readonly PageActionSpec[];
}

/** `layout = "board"`: the records of `query` in columns by `groupBy`. */
export interface BoardSpec {
  query: string;
  groupBy: string;
  orderBy?: string;
  columns: ReadonlyArray<{ value: string; label: string; description?: string }>;
  card: { title: string; description?: string; href?: string; fields: readonly string[] };
  move?: { workflow: string; payloadField?: string; successMessage?: string; errorMessage?: string };
}

/** A widget event: an update of the record (Zebric's `$row.*`, `$to.*`, `$value`... templates) and/or a workflow. */
export interface WidgetEventSpec {
  update?: Readonly<Record<string, unknown>>;
  workflow?: string;
}

/** A `kind = "board"` widget: cards of `entity` in columns (a column entity's records, or declared values). */
export interface WidgetSpec {
  kind: 'board';
  entity: string;
  groupBy: string;
  /** Declared columns of a text or Enum `groupBy`; else the records of `columnEntity`. */
  columns?: ReadonlyArray<{ value: string; label: string; description?: string }>;
  columnEntity?: string;
  columnLabel: string;
  columnOrder: string;
  rankField: string;
  card: {
    title: string;
    subtitle?: string;
    meta?: readonly string[];
    href?: string;
    toggles?: ReadonlyArray<{ field: string; label?: string; labelOn?: string; labelOff?: string }>;
  };
  events: Readonly<Partial<Record<'move' | 'toggle' | 'edit' | 'column_rename', WidgetEventSpec>>>;
}

/**
 * How a page starts a workflow (pages/page-workflows.ts, handed in by an app that has workflows):
 * as the request's actor, with the checks a skill action's job makes, stored as a job in the unit
 * of work of `prepare`, which reads (and may change) what the job is about and answers its data:
 * a refusal there leaves nothing written and no job.
 */
export interface PageWorkflows {
  submit(ctx: RequestContext, workflow: string, prepare: () => Work<Record<string, unknown>>): Promise<void>;
}
