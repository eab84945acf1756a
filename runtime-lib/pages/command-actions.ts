// A detail page's commands: those this viewer may run on the record now, offered as forms
// (command-forms.ts), and a form posted back, run through the one executor as the API runs it.
// A post from a page that showed the record otherwise than it is now (it moved on, or the viewer
// may no longer see it so) is refused with the page as it is now, and nothing is written.

import { commandOffered, type CommandRuntime, type CommandSpec } from '../commands/executor.ts';
import { AppError } from '../core/errors.ts';
import type { RecordKey } from '../core/ids.ts';
import type { Row } from '../data/database.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import type { CommandRoute } from '../http/command-routes.ts';
import { requestContext } from '../http/context.ts';
import { commandForms, commandInput, confirmForm, type OfferedCommand, recordDigest } from './command-forms.ts';
import type { Html } from './html.ts';
import { runPageQueries } from './page-queries.ts';
import type { PageRequest, Rerender } from './page-routes.ts';
import { leaveFlash, type PageSite, redirect } from './page-view.ts';

export interface PageCommands {
  routes: readonly CommandRoute[];
  runtime: CommandRuntime;
  byName: ReadonlyMap<string, CommandSpec>;
}

/** The commands of the page this viewer may run on `shown` (the record as the page shows it). */
export async function commandsPart(
  commands: PageCommands | undefined,
  pr: PageRequest,
  entity: string,
  shown: Row,
  ctx: RequestContext,
  again?: Rerender,
): Promise<Html> {
  const seen = recordDigest(shown);
  if (again?.commands) return again.commands(shown, seen);
  const offered = await offeredCommands(commands, pr, entity, shown, ctx);
  return commandForms({ commands: offered, seen, csrfToken: csrfToken(pr) });
}

async function offeredCommands(
  commands: PageCommands | undefined,
  pr: PageRequest,
  entity: string,
  shown: Row,
  ctx: RequestContext,
): Promise<OfferedCommand[]> {
  const declared = pr.page.commands ?? [];
  if (!commands || declared.length === 0) return [];
  const store = commands.runtime.stores.get(entity) as EntityStore;
  const key = shown[store.spec.primaryKey] as RecordKey | undefined;
  if (key === undefined) return [];
  return store.db.read(
    (function* () {
      // The conditions read the record as stored, not as this viewer is shown it.
      const record = yield* store.load(ctx, key, store.access.filter(ctx.actor, 'read'));
      const out: OfferedCommand[] = [];
      for (const page of declared) {
        const spec = commands.byName.get(page.name) as CommandSpec;
        if (yield* commandOffered(commands.runtime, spec, ctx.actor, record))
          out.push({ page, input: spec.input ?? [] });
      }
      return out;
    })(),
    ctx.trace,
  );
}

function csrfToken(pr: PageRequest): string | undefined {
  return pr.site.signIn?.csrfToken(pr.req, pr.res);
}

export interface ActionPages {
  render(pr: PageRequest, again?: Rerender): Promise<void>;
  notFound(pr: PageRequest): void;
  site: PageSite;
}

/** POST `_action=command`: the command `_command` on the page's record, as the form sent it. */
export async function commandAction(
  commands: PageCommands,
  pr: PageRequest,
  sent: Readonly<Record<string, string>>,
  pages: ActionPages,
): Promise<void> {
  const declared = pr.page.commands?.find((c) => c.name === sent._command);
  const spec = declared && commands.byName.get(declared.name);
  if (!declared || !spec) throw new AppError('VALIDATION_FAILED', 'this page offers no such command');
  const ctx = requestContext(pr.req, { mutation: false });
  const store = commands.runtime.stores.get(spec.entity) as EntityStore;
  // The record as the page shows it now: its path names it, never the form.
  const shown = await currentRecord(pr, store, ctx);
  if (!shown) return pages.notFound(pr);
  const command: OfferedCommand = { page: declared, input: spec.input ?? [] };
  const csrf = csrfToken(pr);
  const refuse = (status: number, message: string, details: AppError['details'] = []) =>
    pages.render(pr, {
      status,
      flash: { kind: 'error', text: message },
      commands: (_record, seen) =>
        commandForms({
          commands: [command],
          seen,
          csrfToken: csrf,
          failure: { command: declared.name, message, details: details ?? [], sent },
        }),
    });
  if (sent._seen !== recordDigest(shown)) {
    return refuse(
      409,
      `${declared.label} was not run: this record changed since the page showed it. Look at it again, then decide.`,
    );
  }
  if (declared.confirm && sent._confirmed !== '1') {
    return pages.render(pr, {
      status: 200,
      commands: (_record, seen) =>
        confirmForm(command, { commands: [command], seen, csrfToken: csrf, cancelHref: pathOf(pr), sent }),
    });
  }
  const key = String(shown[store.spec.primaryKey]);
  const route = commands.routes.find((r) => r.operationId === spec.operationId) as CommandRoute;
  try {
    await route.execute(ctx, key, commandInput(command.input, sent));
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    return refuse(err.status, `${declared.label} was not run: ${err.message}.`, err.details);
  }
  leaveFlash(pages.site, pr.res, { kind: 'success', text: `${declared.label}: done.` });
  redirect(pr.res, pathOf(pr));
}

/** The page's record as this viewer reads it now, or undefined when there is none to read. */
async function currentRecord(pr: PageRequest, store: EntityStore, ctx: RequestContext): Promise<Row | undefined> {
  const first = pr.page.queries[0];
  const results = await store.db.read(runPageQueries(pr.site.stores, [first], ctx, pr.params), ctx.trace);
  return results[first.name].records[0];
}

function pathOf(pr: PageRequest): string {
  return (pr.req.url ?? '/').split('?')[0];
}
