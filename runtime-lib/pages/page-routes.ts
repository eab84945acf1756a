// The blueprint's pages, served on GET at their paths, and the actions posted back to them (a
// detail page's commands). Everything a page shows comes from the same stores, rules and executor
// as the API, run as the request's actor: a page shows no more than the API would show this
// viewer, and does nothing the API would refuse them.

import type { ServerResponse } from 'node:http';
import express, { Router } from 'express';
import type { CommandRuntime, CommandSpec } from '../commands/executor.ts';
import { AppError } from '../core/errors.ts';
import type { RecordKey } from '../core/ids.ts';
import type { Row } from '../data/database.ts';
import type { EntityStore } from '../data/entity-store.ts';
import { BODY_LIMIT, isMultipart } from '../http/body.ts';
import type { CommandRoute } from '../http/command-routes.ts';
import { requestContext } from '../http/context.ts';
import { matched } from '../http/pipeline.ts';
import type { ApiRequest } from '../http/request.ts';
import { reportedError } from '../http/respond.ts';
import { actionBarPart, barAction, barRecord } from './action-bar.ts';
import { boardLayout, boardMove } from './board-layout.ts';
import { commandAction, commandsPart, type PageCommands } from './command-actions.ts';
import { dashboardLayout } from './dashboard-layout.ts';
import { detailLayout } from './detail-layout.ts';
import { formAction, type FormUploads } from './form-actions.ts';
import { type FormFailure, formLayout, formPart } from './form-layout.ts';
import { html, type Html, trusted } from './html.ts';
import type { LayoutContext } from './layout-context.ts';
import { listLayout } from './list-layout.ts';
import type { Flash } from './page-document.ts';
import { runPageQueries } from './page-queries.ts';
import type { SignIn } from './index-route.ts';
import type { PageSpec, PageWorkflows } from './page-spec.ts';
import { pageTemplateInput, slotRenderer } from './page-templates.ts';
import { templateVariables } from './template-context.ts';
import { mayOpen, type PageSite, redirect, sendView, signInHref, takeFlash } from './page-view.ts';
import type { RecordLinks } from './values.ts';
import { widgetEvent, widgetLayout } from './widget-layout.ts';

/** The layouts rendered here; the generator refuses a page of any other. */
export const LAYOUTS: Readonly<Record<string, (view: LayoutContext) => Html>> = {
  list: listLayout,
  detail: detailLayout,
  dashboard: dashboardLayout,
  board: boardLayout,
  widget: widgetLayout,
  form: formLayout,
};

export interface PageRouterOptions extends PageSite {
  stores: ReadonlyMap<string, EntityStore>;
  /** The uploads of each entity with file fields: forms post their files through them. */
  files?: Readonly<Record<string, FormUploads>>;
  /** The app's commands, offered on detail pages. */
  commands?: {
    specs: ReadonlyArray<CommandSpec<never, never>>;
    routes: readonly CommandRoute[];
    runtime: CommandRuntime;
  };
  /** Starts the workflows of action bars, board moves and widget events (pages/page-workflows.ts). */
  workflows?: PageWorkflows;
}

/** A page request, as the layouts and actions see it. */
export interface PageRequest {
  site: PageRouterOptions;
  page: PageSpec;
  req: ApiRequest;
  res: ServerResponse;
  params: Record<string, string>;
}

/** What renders a page again after a POST: the message and the form state the action left. */
export interface Rerender {
  status: number;
  flash?: Flash;
  /** Replaces the detail page's commands part (a refused command's form, a confirmation). */
  commands?: (record: Row, seen: string) => Html;
  /** Replaces a form page's form state: a refused submission's input and messages. */
  form?: FormFailure;
}

export function pageRouter(options: PageRouterOptions): Router {
  const router = Router({ caseSensitive: true });
  const links = recordLinks(options);
  const db = [...options.stores.values()][0]?.db;
  const commands: PageCommands | undefined = options.commands && {
    ...options.commands,
    byName: new Map(options.commands.specs.map((s) => [s.name, s as unknown as CommandSpec])),
  };
  const entity = (name: string) => (options.stores.get(name) as EntityStore).spec;

  /** Runs the page's queries and sends it; `again` when a POST shows it again. */
  const render = async (pr: PageRequest, again?: Rerender): Promise<void> => {
    const { page, req, res, params } = pr;
    // Zebric's `auth` layout is a sign-in form: here, the app's own sign-in page, back to `next`.
    if (page.layout === 'auth' && !page.template && options.signIn) return redirect(res, authHref(options.signIn, req));
    const ctx = requestContext(req, { mutation: false });
    const skip = page.layout === 'list' ? pageNumber(req.url) : 0;
    const results = await db.read(runPageQueries(options.stores, page.queries, ctx, params, skip), ctx.trace);
    const view: LayoutContext = {
      page,
      results,
      entity,
      links,
      skip,
      pageHref: (n) => (n === 0 ? pathOnly(req.url) : `${pathOnly(req.url)}?page=${n + 1}`),
      csrfToken: options.signIn?.csrfToken(req, res),
    };
    if (page.layout === 'detail' && page.queries.length > 0) {
      const first = results[page.queries[0].name];
      if (first.records.length === 0) return notFound(pr);
      if (!page.template) view.commands = await commandsPart(commands, pr, first.entity, first.records[0], ctx, again);
    }
    if (page.form && !page.template) {
      view.form = await formPart(pr, results, ctx, again?.form);
      if (!view.form) return notFound(pr);
    }
    // The blueprint's templates (page-templates.ts): a template renders the page, slots parts of it.
    const input =
      (page.template || page.slots) &&
      pageTemplateInput(page, results, req, params, options.signIn?.csrfToken(req, res) ?? '');
    if (input) view.slot = slotRenderer(page, input);
    const main = page.template && input ? trusted(page.template.render(templateVariables(input))) : undefined;
    const flash = again?.flash ?? takeFlash(options, req, res);
    sendView(options, req, res, {
      status: again?.status ?? 200,
      title: page.title,
      main: html`${actionBarPart(pr, barRecord(pr, results))}${main ?? LAYOUTS[page.layout](view)}`,
      flash,
    });
  };

  const notFound = (pr: PageRequest) =>
    sendView(options, pr.req, pr.res, {
      status: 404,
      title: 'Not found',
      main: html`<p>There is nothing here, or it is not yours to see.</p>`,
    });

  /** An error while serving a page, as a page: the message of a refusal, never a stack trace. */
  const failed = (pr: PageRequest, err: unknown): void => {
    const error = reportedError(err, pr.req, (line) => console.error(line), `page ${pr.page.path}`);
    if (error.code === 'UNAUTHENTICATED' && options.signIn)
      return redirect(pr.res, signInHref(options, pr.req) as string);
    const title =
      error.status >= 500
        ? 'Something went wrong'
        : error.status === 401 || error.status === 403
          ? 'Not allowed'
          : error.status === 404
            ? 'Not found'
            : 'That did not work';
    const main =
      error.status >= 500
        ? html`<p>The page could not be shown. Reference: <code>${pr.req.trace?.traceId ?? ''}</code></p>`
        : html`<p>${error.message}</p>`;
    sendView(options, pr.req, pr.res, { status: error.status, title, main });
  };

  const formBody = express.urlencoded({ extended: false, limit: BODY_LIMIT });
  for (const page of fixedSegmentsFirst(options.pages)) {
    const handle =
      (serve: (pr: PageRequest) => Promise<void>) => async (req: express.Request, res: express.Response) => {
        const apiReq = req as unknown as ApiRequest;
        const pr: PageRequest = {
          site: options,
          page,
          req: apiReq,
          res,
          params: { ...req.params } as Record<string, string>,
        };
        if (!mayOpen(page, apiReq)) {
          if (options.signIn?.loginRequired) return options.signIn.loginRequired(apiReq, res, apiReq.url ?? '/');
          const href = signInHref(options, apiReq);
          if (href) return redirect(res, href);
          return sendView(options, apiReq, res, {
            status: 401,
            title: 'Sign in required',
            main: html`<p>This page is for signed-in people.</p>`,
          });
        }
        try {
          await serve(pr);
        } catch (err) {
          failed(pr, err);
        }
      };
    router.get(page.path, matched(`page ${page.path}`), handle(render));
    router.post(
      page.path,
      matched(`page ${page.path}`),
      formBody,
      handle(async (pr) => {
        const sent = formFields(pr.req.body);
        if (sent._action === 'command' && page.layout === 'detail' && commands) {
          return commandAction(commands, pr, sent, { render, notFound, site: options });
        }
        const pages = { render, notFound, site: options };
        if (sent._action === 'action') return barAction(options.workflows, pr, sent, pages);
        if (sent._action === 'move' && page.board) return boardMove(options.workflows, pr, sent, pages);
        if (sent._action === 'widget' && page.widget) return widgetEvent(options.workflows, pr, sent, pages);
        // A form a `form.form` slot renders may not say `_action`: a form page's post is its form's.
        if (page.form && (sent._action === 'form' || sent._action === undefined || isMultipart(pr.req)))
          return formAction(pr, sent, pages);
        throw new AppError('VALIDATION_FAILED', 'this page has no such action');
      }),
    );
  }
  return router;
}

/**
 * The pages in the order Express must try them: where two paths differ first by a fixed segment
 * against a parameter (`/tasks/new`, `/tasks/:id`), the fixed one first, or `new` would be taken
 * for an id. Otherwise the blueprint's order (a stable sort).
 */
function fixedSegmentsFirst(pages: readonly PageSpec[]): PageSpec[] {
  const kinds = (page: PageSpec) => page.path.split('/').map((s) => (s.startsWith(':') ? 1 : 0));
  return [...pages].sort((a, b) => {
    const [x, y] = [kinds(a), kinds(b)];
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
    return 0;
  });
}

/** The page paths as openapi.json writes paths (`/tickets/{id}`), for the 405 of other methods. */
export function pagePaths(pages: readonly PageSpec[]): string[] {
  return pages.map((p) => p.path.replace(/:(\w+)/g, '{$1}'));
}

/** A form body's fields as strings (a repeated field: its first value). */
function formFields(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof body !== 'object' || body === null) return out;
  for (const [key, value] of Object.entries(body)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') out[key] = first;
  }
  return out;
}

/** The sign-in page, then back to where `?next=` (Zebric's `callbackURL`) says; the sign-in route checks it. */
function authHref(signIn: SignIn, req: ApiRequest): string {
  const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
  const next = query.get('next') ?? query.get('callbackURL') ?? '/';
  return `${signIn.loginPath}?next=${encodeURIComponent(next)}`;
}

/** `?page=N` (from 1): how many whole pages the list moves on. Anything else is the first. */
function pageNumber(url: string | undefined): number {
  const match = /[?&]page=(\d{1,6})(?:&|$)/.exec(url ?? '');
  const n = match ? Number(match[1]) : 1;
  return n >= 1 ? n - 1 : 0;
}

function pathOnly(url: string | undefined): string {
  return (url ?? '/').split('?')[0];
}

/**
 * Where each entity's records have a page of their own: a detail page whose first query takes the
 * record by its key from a path parameter (`where = { id = "$params.id" }` on `/tickets/:id`).
 */
function recordLinks(options: PageRouterOptions): RecordLinks {
  const links = new Map<string, (id: unknown) => string>();
  for (const page of options.pages) {
    const query = page.queries[0];
    if (page.layout !== 'detail' || !query || links.has(query.entity)) continue;
    const key = options.stores.get(query.entity)?.spec.primaryKey;
    const byKey = query.where?.find((w) => w.field === key && typeof w.value === 'string');
    const param = typeof byKey?.value === 'string' && /^\$params\.(\w+)$/.exec(byKey.value)?.[1];
    if (!param || (query.where?.length ?? 0) !== 1 || !page.path.includes(`:${param}`)) continue;
    const segment = new RegExp(`:${param}(?=/|$)`);
    links.set(query.entity, (id) => page.path.replace(segment, encodeURIComponent(String(id as RecordKey))));
  }
  return links;
}
