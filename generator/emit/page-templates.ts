// The blueprint's own templates in the generated code: each a `compileTemplate(...)` call the app
// runs when it starts (a page's template and slots in src/pages.ts, [auth.pages] in
// src/auth-pages.ts), and the packages an app with templates depends on.

import { pageServed } from '../model/pages.ts';
import type { Blueprint, PageTemplate } from '../model/types.ts';
import { call } from './ts-literal.ts';

/** The template engines' packages: what bp itself compiles and tests templates with. */
export const TEMPLATE_DEPENDENCIES: Record<string, string> = {
  handlebars: '^4.7.10',
  liquidjs: '^10.30.1',
};

/** Whether the app compiles templates: a served page's template or slot, or [auth.pages] of the email provider. */
export function usesTemplates(bp: Blueprint): boolean {
  return (
    bp.pages.some((p) => pageServed(p) && (p.template !== undefined || Object.keys(p.layoutSlots).length > 0)) ||
    Object.keys(authPages(bp)).length > 0
  );
}

/**
 * `compileTemplate({ engine, text, source })`: the app compiles the template when it starts. The
 * module it is written into imports compileTemplate from './runtime/pages/custom-template.ts'.
 */
export function templateCall(template: PageTemplate): unknown {
  return call('compileTemplate', { engine: template.engine, text: template.text, source: template.name });
}

/** A page's `layoutSlots` as compiled templates by slot name, or undefined when it has none. */
export function slotCalls(slots: Readonly<Record<string, PageTemplate>>): Record<string, unknown> | undefined {
  const entries = Object.entries(slots);
  return entries.length ? Object.fromEntries(entries.map(([name, t]) => [name, templateCall(t)])) : undefined;
}

/** The [auth.pages] the app renders: only the email provider has pages. */
export function authPages(bp: Blueprint): Blueprint['auth']['pages'] {
  return bp.auth.providers.includes('email') ? bp.auth.pages : {};
}
