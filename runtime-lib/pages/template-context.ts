// What a blueprint's own template (a page's `template`, a `layoutSlots` entry, an [auth.pages]
// page) is given, and what becomes of its output, without the template engines themselves: those
// are custom-template.ts, which only an app that declares a template imports (and then depends on
// handlebars and liquidjs). The variables are Zebric 0.6's (its RenderContext and engine adapters),
// so a template written for Zebric renders unchanged: `page`, `data` (the query results by name),
// `params`, `query`, `session` (`session.user`), `user`, `isAuthenticated`, `csrfToken`, and in a
// slot `renderer.slot`; bp adds `csrfField`, the form's hidden CSRF input.

import type { ServerResponse } from 'node:http';
import { type Actor, isAuthenticated } from '../core/actor.ts';
import { escapeHtml, htmlDocument, sendPage } from './document.ts';

/**
 * HTML the app made itself, written as it is where a template outputs it: Handlebars writes a
 * value with `toHTML()` unescaped (its SafeString contract), and custom-template.ts tells Liquid's
 * escaping to do the same. Everything else a template outputs is escaped.
 */
export class SafeHtml {
  constructor(readonly html: string) {}
  toHTML(): string {
    return this.html;
  }
  toString(): string {
    return this.html;
  }
}

/** A template compiled once when the app starts. */
export interface CompiledTemplate {
  /** The template's file as the blueprint names it, or the blueprint key of an inline one: for the logs. */
  readonly source: string;
  /** The HTML; throws a TemplateRenderError when the template fails while rendering. */
  render(data: Readonly<Record<string, unknown>>): string;
}

/** A template that threw while rendering (a helper or filter failed, a limit was reached). */
export class TemplateRenderError extends Error {
  constructor(
    readonly source: string,
    cause: unknown,
  ) {
    super(`template ${source} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'TemplateRenderError';
  }
}

/** The built-in layouts' slots a `layoutSlots` template may replace (Zebric's LayoutSlotName). */
export const SLOT_NAMES = [
  'list.header',
  'list.body',
  'list.empty',
  'detail.main',
  'detail.related',
  'form.form',
  'dashboard.widgets',
] as const;
export type SlotName = (typeof SLOT_NAMES)[number];

/** The hidden input every form that posts to the app carries. */
export function csrfField(token: string): SafeHtml {
  return new SafeHtml(`<input type="hidden" name="_csrf" value="${escapeHtml(token)}">`);
}

export interface TemplateInput {
  /** What Zebric calls the page: at least its path and title, as the page's spec has them. */
  page: Readonly<Record<string, unknown>>;
  /** The page's query results, by query name, already filtered by the viewer's read rules. */
  data: Readonly<Record<string, unknown>>;
  /** The path's parameters (`:id`, `{id}`). */
  params?: Readonly<Record<string, string>>;
  /** The query string's parameters. */
  query?: Readonly<Record<string, string>>;
  actor?: Actor;
  /** The token the page's forms carry: the session's, else the anonymous one. */
  csrfToken: string;
  /** Slot templates only: what the slot is about (Zebric's `renderer.slot`: entity, items, record...). */
  slot?: Readonly<Record<string, unknown>>;
}

/**
 * The variables of a template. The signed-in person is `user` (and `session.user`): their id,
 * e-mail, name and roles, nothing else of the session (its id is a credential).
 */
export function templateVariables(input: TemplateInput): Record<string, unknown> {
  const user = isAuthenticated(input.actor) && input.actor.kind === 'user' ? viewer(input.actor) : null;
  return {
    page: input.page,
    data: input.data,
    params: input.params ?? {},
    query: input.query ?? {},
    session: user && { user },
    user,
    isAuthenticated: user !== null,
    csrfToken: input.csrfToken,
    csrfField: csrfField(input.csrfToken),
    renderer: input.slot ? { slot: input.slot } : {},
  };
}

function viewer(actor: Actor): Record<string, unknown> {
  const name = actor.metadata?.name ?? actor.displayName;
  return {
    id: actor.id,
    ...(actor.email !== undefined ? { email: actor.email } : {}),
    ...(typeof name === 'string' ? { name } : {}),
    ...(actor.role !== undefined ? { role: actor.role } : {}),
    roles: actor.roles,
  };
}

/**
 * The HTML of a slot of a built-in layout when the page replaces it (`layoutSlots`), else
 * undefined: the layout renders its own. A template that throws is a TemplateRenderError, for the
 * page's 500 (sendTemplateFailure), never a page rendered half by the blueprint and half by bp.
 */
export function renderSlot(
  slots: Readonly<Partial<Record<SlotName, CompiledTemplate>>> | undefined,
  name: SlotName,
  input: TemplateInput,
): string | undefined {
  const template = slots?.[name];
  return template && template.render(templateVariables(input));
}

/**
 * An [auth.pages] page from its template: the template's HTML inside the sign-in pages' document
 * under `title`; output that is a document of its own (it starts with `<!doctype html>`, as
 * Zebric's auth templates do) is sent as it is. (A page's template is the content of the pages'
 * document: page-routes.ts.)
 */
export function templateDocument(title: string, html: string): string {
  return /^\s*<!doctype html/i.test(html) ? html : htmlDocument(title, html);
}

/**
 * The answer to a page whose template failed while rendering: logged with the trace id and the
 * template's source, and a 500 page that says no more than that the page could not be shown.
 */
export function sendTemplateFailure(
  res: ServerResponse,
  err: unknown,
  where: { traceId?: string; method?: string; path?: string },
  log: (line: string) => void = (line) => console.error(line),
): void {
  const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
  log(`[${where.traceId ?? ''}] ${where.method ?? 'GET'} ${where.path ?? ''}: ${detail}`);
  if (res.headersSent) return;
  const body = `<p>This page could not be shown because of an error in its template.</p>
<p>Reference: <code>${escapeHtml(where.traceId ?? '')}</code></p>
`;
  sendPage(res, 500, htmlDocument('Something went wrong', body), { private: true });
}
