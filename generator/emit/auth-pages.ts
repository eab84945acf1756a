// src/auth-pages.ts: [auth.pages], the blueprint's own pages of the email provider, as compiled
// templates.

import type { Blueprint } from '../model/types.ts';
import { authPages, templateCall } from './page-templates.ts';
import { render } from './templates.ts';
import { tsProperties } from './ts-literal.ts';

/** The module, or undefined when there are no [auth.pages] to render. */
export function emitAuthPages(bp: Blueprint): string | undefined {
  const pages = authPages(bp);
  if (Object.keys(pages).length === 0) return undefined;
  const entries = Object.fromEntries(Object.entries(pages).map(([name, t]) => [name, templateCall(t)]));
  return render('app/src/auth-pages.ts.hbs', { pages: tsProperties(entries, 2) });
}
