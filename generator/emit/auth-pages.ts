// src/auth-pages.ts: [auth.pages] as compiled templates, and the packages an app with templates
// depends on.

import type { Blueprint, PageTemplate } from '../model/types.ts';
import { render } from './templates.ts';
import { call, tsProperties } from './ts-literal.ts';

/** The template engines' packages: what bp itself compiles and tests templates with. */
export const TEMPLATE_DEPENDENCIES: Record<string, string> = {
  handlebars: '^4.7.10',
  liquidjs: '^10.30.1',
};

/** Whether the app compiles templates: a page's template or slot, or [auth.pages] of the email provider. */
export function usesTemplates(bp: Blueprint): boolean {
  return (
    bp.pages.some((p) => p.template !== undefined || Object.keys(p.layoutSlots).length > 0) ||
    Object.keys(authPages(bp)).length > 0
  );
}

/** `compileTemplate({ engine, text, source })`: the app compiles the template when it starts. */
export function templateCall(template: PageTemplate): unknown {
  return call('compileTemplate', { engine: template.engine, text: template.text, source: template.name });
}

/** The [auth.pages] the app renders: only the email provider has pages. */
function authPages(bp: Blueprint): Blueprint['auth']['pages'] {
  return bp.auth.providers.includes('email') ? bp.auth.pages : {};
}

/** The module, or undefined when there are no [auth.pages] to render. */
export function emitAuthPages(bp: Blueprint): string | undefined {
  const pages = authPages(bp);
  if (Object.keys(pages).length === 0) return undefined;
  const entries = Object.fromEntries(Object.entries(pages).map(([name, t]) => [name, templateCall(t)]));
  return render('app/src/auth-pages.ts.hbs', { pages: tsProperties(entries, 2) });
}
