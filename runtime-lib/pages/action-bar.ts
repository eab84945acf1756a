// A page's `actionBar`: its title and description, then its actions, each a link or a button
// that starts a workflow with the record's values in its payload. An action whose `visibleWhen`
// does not hold for the page's record is not shown; one whose `enabledWhen` does not hold is shown
// disabled. Posted anyway, either is refused on the server (as is a post from a page that showed
// the record otherwise than it is now), and no job is stored. Without JavaScript, `confirm` asks on
// a page of its own first.

import type { Actor } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import type { RecordKey } from '../core/ids.ts';
import type { Row } from '../data/database.ts';
import type { EntityStore } from '../data/entity-store.ts';
import { requestContext } from '../http/context.ts';
import { checkCondition, type Condition, rule } from '../rules/conditions.ts';
import { type ActionPages } from './command-actions.ts';
import { html, type Html } from './html.ts';
import type { PageRequest } from './page-routes.ts';
import type { PageActionSpec, PageWorkflows } from './page-spec.ts';
import { leaveFlash, redirect, sendView } from './page-view.ts';
import { fieldsDigest, fillHref, fillPayload, type TemplateScope } from './record-templates.ts';

/** Conditions parsed once per action, not per request. */
const parsed = new WeakMap<object, Condition>();

function holds(condition: Readonly<Record<string, unknown>> | undefined, actor: Actor, record: Row | undefined) {
  if (!condition) return true;
  let compiled = parsed.get(condition);
  if (!compiled) parsed.set(condition, (compiled = rule(condition)));
  return checkCondition(compiled, { actor, record: record ?? null });
}

/** The action a form names: `a<i>` of `actions`, `s<i>` of `secondaryActions`. */
function actionById(pr: PageRequest, id: string | undefined): PageActionSpec | undefined {
  const bar = pr.page.actionBar;
  const match = /^([as])(\d{1,3})$/.exec(id ?? '');
  if (!bar || !match) return undefined;
  return (match[1] === 'a' ? bar.actions : bar.secondaryActions)[Number(match[2])];
}

/** The record the bar is about: a detail page's record, as this viewer reads it. */
export function barRecord(pr: PageRequest, results: Readonly<Record<string, { records: Row[] }>>): Row | undefined {
  return pr.page.layout === 'detail' ? results[pr.page.queries[0]?.name]?.records[0] : undefined;
}

export function actionBarPart(pr: PageRequest, record: Row | undefined): Html {
  const bar = pr.page.actionBar;
  if (!bar) return html``;
  const actor = pr.req.actor;
  const scope: TemplateScope = { record, params: pr.params };
  const csrf = pr.site.signIn?.csrfToken(pr.req, pr.res);
  const query = pr.page.queries[0];
  const seen = record && query ? fieldsDigest((pr.site.stores.get(query.entity) as EntityStore).spec, record) : '';
  const part = (action: PageActionSpec, id: string, secondary: boolean): Html => {
    if (!holds(action.visibleWhen, actor, record)) return html``;
    const enabled = holds(action.enabledWhen, actor, record);
    const style = secondary ? 'link' : (action.style ?? 'primary');
    const icon = action.icon && !/[A-Za-z]{2}/.test(action.icon) ? action.icon : undefined;
    const label = html`${icon ? html`<span class="icon" aria-hidden="true">${icon}</span> ` : ''}${action.label}`;
    if (action.workflow) {
      return html`<form method="post" class="bar-action">
${hidden(csrf, id, seen)}<button type="submit" class="${style}"${enabled ? '' : html` disabled`}>${label}</button>
</form>
`;
    }
    const href = action.href === undefined ? undefined : fillHref(action.href, scope);
    if (!href || !enabled) return html`<span class="button ${style} disabled" aria-disabled="true">${label}</span>\n`;
    const target = action.target ? html` target="${action.target}"` : '';
    const rel = action.target === '_blank' ? html` rel="noopener noreferrer"` : '';
    return html`<a class="button ${style}" href="${href}"${target}${rel}>${label}</a>\n`;
  };
  const actions = bar.actions.map((a, i) => part(a, `a${i}`, false));
  const secondary = bar.secondaryActions.map((a, i) => part(a, `s${i}`, true));
  const head =
    bar.title || bar.description
      ? html`<div class="bar-head">${bar.title ? html`<p class="bar-title">${bar.title}</p>` : ''}\
${bar.description ? html`<p>${bar.description}</p>` : ''}</div>\n`
      : '';
  return html`<section class="action-bar" aria-label="${bar.title ?? 'Actions'}">
${head}<div class="bar-actions">
${actions}</div>
${secondary.length ? html`<div class="bar-secondary">\n${secondary}</div>\n` : ''}</section>
`;
}

function hidden(csrf: string | undefined, id: string, seen: string): Html {
  return html`${csrf ? html`<input type="hidden" name="_csrf" value="${csrf}">\n` : ''}\
<input type="hidden" name="_action" value="action">
<input type="hidden" name="_id" value="${id}">
<input type="hidden" name="_seen" value="${seen}">
`;
}

/**
 * POST `_action=action`: the action `_id` starts its workflow, as the viewer, for the record as
 * it is now (read in the job's unit of work): refused when the page showed it otherwise, when the
 * action is hidden or disabled for it, or when the workflow's own checks refuse.
 */
export async function barAction(
  workflows: PageWorkflows | undefined,
  pr: PageRequest,
  sent: Readonly<Record<string, string>>,
  pages: ActionPages,
): Promise<void> {
  const action = actionById(pr, sent._id);
  if (!action?.workflow || !workflows) throw new AppError('VALIDATION_FAILED', 'this page has no such action');
  const workflow = action.workflow;
  const ctx = requestContext(pr.req, { mutation: true });
  const query = pr.page.layout === 'detail' ? pr.page.queries[0] : undefined;
  const store = query && pr.site.stores.get(query.entity);
  const refuse = (status: number, text: string) => pages.render(pr, { status, flash: { kind: 'error', text } });
  const key = query ? recordKey(pr, store as EntityStore, query.where) : undefined;
  if (query && key === undefined) return pages.notFound(pr);
  if (action.confirm && sent._confirmed !== '1') return confirmPage(pr, action, sent, pages);
  let record: Row | undefined;
  try {
    await workflows.submit(ctx, workflow, function* () {
      record = store && key !== undefined ? yield* store.get(ctx, key) : undefined;
      if (record && store && sent._seen !== fieldsDigest(store.spec, record))
        throw stale(
          `${action.label} was not started: this record changed since the page showed it. ` +
            'Look at it again, then decide.',
        );
      if (!holds(action.visibleWhen, ctx.actor, record) || !holds(action.enabledWhen, ctx.actor, record))
        throw stale(`${action.label} is not available for this record.`);
      const payload = fillPayload(action.payload, { record, params: pr.params });
      return {
        params: pr.params,
        payload,
        body: payload,
        entity: query?.entity ?? null,
        recordId: key ?? null,
        record: record ?? null,
        page: pr.page.path,
      };
    });
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    if (err.code === 'NOT_FOUND') return pages.notFound(pr);
    const text =
      err.code === 'STATE_CONFLICT'
        ? err.message
        : (action.errorMessage ?? `${action.label} was not started: ${err.message}.`);
    return refuse(err.status, text);
  }
  leaveFlash(pages.site, pr.res, { kind: 'success', text: action.successMessage ?? `${action.label}: started.` });
  const scope: TemplateScope = { params: pr.params, record };
  redirect(pr.res, (action.redirect && fillHref(action.redirect, scope)) || pathOf(pr));
}

function stale(message: string): AppError {
  return new AppError('STATE_CONFLICT', message);
}

/** The page's record key: its first query takes it from a path parameter (`id = "$params.id"`). */
function recordKey(
  pr: PageRequest,
  store: EntityStore,
  where: ReadonlyArray<{ field: string; value: unknown }> | undefined,
): RecordKey | undefined {
  const byKey = where?.find((w) => w.field === store.spec.primaryKey);
  const param = typeof byKey?.value === 'string' ? /^\$params\.(\w+)$/.exec(byKey.value)?.[1] : undefined;
  return param !== undefined && Object.hasOwn(pr.params, param) ? (pr.params[param] as RecordKey) : undefined;
}

/** The question of an action's `confirm`, on a page of its own: the form again with `_confirmed`. */
function confirmPage(
  pr: PageRequest,
  action: PageActionSpec,
  sent: Readonly<Record<string, string>>,
  pages: ActionPages,
): void {
  const csrf = pr.site.signIn?.csrfToken(pr.req, pr.res);
  const style = action.style ?? 'primary';
  sendView(pages.site, pr.req, pr.res, {
    status: 200,
    title: pr.page.title,
    main: html`<section class="panel" role="alertdialog" aria-labelledby="confirm-question">
<p id="confirm-question">${action.confirm ?? ''}</p>
<form method="post">
${hidden(csrf, sent._id ?? '', sent._seen ?? '')}<input type="hidden" name="_confirmed" value="1">
<button type="submit" class="${style}">${action.label}</button>
<a href="${pathOf(pr)}">Cancel</a>
</form>
</section>
`,
  });
}

function pathOf(pr: PageRequest): string {
  return (pr.req.url ?? '/').split('?')[0];
}
