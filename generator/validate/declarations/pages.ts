// Rules on one page declaration that need nothing else: form fields (MIME types, the lookup
// block a lookup field needs, optionsFrom only on a select, patterns that compile), the board a
// board layout needs, and the presentational keys bp ignores.

import type { CompileContext } from '../../context.ts';
import { buildPage } from '../../model/build-sections.ts';
import { BUILT_IN_LAYOUTS, pageServed } from '../../model/pages.ts';
import type { Page } from '../../model/types.ts';
import { list, singleSection, table, type Raw } from '../../model/raw.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { checkMimeTypes } from './common.ts';

/** Page keys that only style what a page renders (Zebric's per-page UX settings and HTML meta). */
const PRESENTATIONAL = ['ux', 'meta'];

export function checkPage(ctx: CompileContext, route: string, raw: Raw): void {
  const at: KeyPath = ['page', route];
  list(table(raw.form).fields).forEach((f, i) => {
    if (isTable(f)) checkFormField(ctx, [...at, 'form', 'fields', i], f);
  });
  if (raw.layout === 'board' && raw.board === undefined) {
    ctx.report('MISSING_KEY', [...at, 'board'], `page "${route}" has layout = "board" but no board`, {
      hint: `add [page."${route}".board] with query, groupBy, columns and card`,
    });
  }
  checkLayout(ctx, at, route, raw);
  checkServed(ctx, route, raw);
  if (raw.form !== undefined && raw.layout !== 'form') {
    // Zebric renders a page's form in the form layout only; elsewhere nothing shows or posts it.
    ctx.report('IGNORED_KEY', [...at, 'form'], `a form is rendered only by layout = "form"; this page's is ignored`, {
      severity: 'warning',
      hint: `give the form a page of its own with layout = "form"`,
    });
  }
  for (const key of PRESENTATIONAL) {
    if (raw[key] !== undefined)
      ctx.report('IGNORED_KEY', [...at, key], `"${key}" is presentational and is ignored`, { severity: 'warning' });
  }
}

/**
 * A page must be one bp can render: Zebric renders a layout it does not know as a dump of the
 * page's data, bp refuses it at generate time instead of serving that (or a blank page). The auth
 * layout is the sign-in page: it needs the email provider.
 */
function checkLayout(ctx: CompileContext, at: KeyPath, route: string, raw: Raw): void {
  if (typeof raw.layout !== 'string' || raw.template !== undefined || raw.widget !== undefined) return;
  if (!BUILT_IN_LAYOUTS.includes(raw.layout)) {
    ctx.report(
      'LAYOUT_NOT_RENDERED',
      [...at, 'layout'],
      `page "${route}" has layout "${raw.layout}", which bp does not render`,
      {
        hint: `use one of ${BUILT_IN_LAYOUTS.join(', ')}, or give the page its own [page."${route}".template]`,
      },
    );
  } else if (raw.layout === 'auth' && !list(table(singleSection(ctx.parsed, 'auth')).providers).includes('email')) {
    ctx.report(
      'LAYOUT_NOT_RENDERED',
      [...at, 'layout'],
      `page "${route}" has layout "auth", a sign-in page, but nobody signs in`,
      {
        hint: 'add providers = ["email"] to [auth], or another layout',
      },
    );
  }
}

/**
 * A page of a built-in layout that lacks what the layout reads (a list or detail page its query,
 * an update form the query of its record) has nothing to show: it is left out with a warning, and
 * the rest of the app is generated (a page bp cannot render at all is LAYOUT_NOT_RENDERED).
 */
function checkServed(ctx: CompileContext, route: string, raw: Raw): void {
  const page = buildPage(route, raw, ctx.parsed.templateFiles);
  if (pageServed(page) || page.widget || !BUILT_IN_LAYOUTS.includes(page.layout)) return;
  // `/` serves the app's index page (runtime/pages/index-route.ts) when no page is served there.
  const instead =
    route === '/'
      ? ": the app's index page (its name, sign-in, the pages and the API's description) is served there"
      : '';
  const what = page.layout === 'form' ? formMissing(page) : `a ${page.layout} page without a query`;
  ctx.report(
    'PAGE_NOT_SERVED',
    ['page', route],
    `page "${route}" is not served, ${what} has nothing to show${instead}`,
    {
      severity: 'warning',
      hint:
        page.layout === 'form'
          ? `give the page a first query of ${page.form?.entity ?? "the form's entity"} ` +
            'that names the record by a path parameter'
          : `add [page."${route}".query.<name>] with the entity it shows`,
    },
  );
}

/** What a form page that is not served lacks (generator/model/pages.ts formServed). */
function formMissing(page: Page): string {
  if (!page.form) return 'a form page without a form';
  const article = page.form.method === 'update' ? 'an' : 'a';
  const { method, entity } = page.form;
  return `${article} ${method} form without a first query of ${entity}, the record it ${method}s,`;
}

function checkFormField(ctx: CompileContext, at: KeyPath, f: Raw): void {
  checkMimeTypes(ctx, [...at, 'accept'], f.accept);
  const name = typeof f.name === 'string' ? f.name : '';
  if (f.type === 'lookup' && f.lookup === undefined) {
    ctx.report('MISSING_KEY', [...at, 'lookup'], `lookup field "${name}" needs a lookup block`, {
      hint: 'add lookup = { entity = "Customer", search = ["name"] }',
    });
  }
  if (f.optionsFrom !== undefined && f.type !== 'select') {
    ctx.report(
      'OPTION_NOT_APPLICABLE',
      [...at, 'optionsFrom'],
      `"optionsFrom" applies only to select fields, not ${typeof f.type === 'string' ? f.type : 'text'}`,
    );
  }
  if (typeof f.pattern === 'string') {
    try {
      // The pattern is checked with JavaScript's RegExp, in the browser and on the server alike.
      new RegExp(f.pattern);
    } catch (err) {
      const reason = (err as Error).message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
      ctx.report(
        'INVALID_PATTERN',
        [...at, 'pattern'],
        `pattern of field "${name}" is not a regular expression: ${reason}`,
      );
    }
  }
}
