// Which of the blueprint's pages the generated app serves, and how their paths and titles read.
// Kept here, in the model, because validation warns about the others and the emitter writes these.

import type { Entity, Page } from './types.ts';

/** The layouts the app renders (runtime-lib/pages/page-routes.ts LAYOUTS). */
export const RENDERED_LAYOUTS: readonly string[] = ['list', 'detail', 'dashboard', 'board', 'form', 'auth'];

/** Zebric 0.6's built-in layouts: a page of another needs its own `template` (LAYOUT_NOT_RENDERED). */
export const BUILT_IN_LAYOUTS: readonly string[] = ['list', 'detail', 'form', 'dashboard', 'board', 'auth'];

/**
 * Served: a page with its own `template` (whatever its layout: the template replaces it), a board
 * widget's page, or a page of a rendered layout whose rendering reads what it needs (a list or
 * detail page its first query, a board page its board). Others are accepted with a NOT_GENERATED
 * warning until their part is built.
 */
export function pageServed(page: Page): boolean {
  if (page.template) return true;
  // A widget page is its widget's (another kind than "board" is WIDGET_NOT_RENDERED).
  if (page.widget) return page.widget.kind === 'board';
  if (!RENDERED_LAYOUTS.includes(page.layout)) return false;
  if (page.layout === 'board') return page.board !== undefined;
  if (page.layout === 'form') return formServed(page);
  // An auth page is the sign-in page (page-routes.ts): it reads no query.
  return page.layout === 'dashboard' || page.layout === 'auth' || page.queries.length > 0;
}

/** A form page has its form, and an update or delete form its record: its first query, of the form's entity. */
function formServed(page: Page): boolean {
  if (!page.form) return false;
  return page.form.method === 'create' || page.queries[0]?.entity === page.form.entity;
}

/** Express's form of a page path: Zebric's `{id}` segments as `:id`. */
export function expressPath(route: string): string {
  return route.replace(/\{(\w+)\}/g, ':$1');
}

/** The page's title, or one made from its path's last fixed segment (`/tickets/:id` reads "Tickets"). */
export function pageTitle(page: Page, projectName: string): string {
  if (page.title) return page.title;
  const fixed = page.route.split('/').filter((s) => s !== '' && !s.startsWith(':') && !s.startsWith('{'));
  const last = fixed[fixed.length - 1];
  if (!last) return projectName;
  const words = last.replace(/[-_]+/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A form's `type = "file"` input on an entity field that is not a `file` field: bp stores no upload there. */
export function fileInputOffField(entity: Entity | undefined, raw: Record<string, unknown>): boolean {
  const field = entity?.fields.find((f) => f.name === raw.name);
  return raw.type === 'file' && field !== undefined && field.type !== 'file';
}
