// What every page request shares: who is looking (their account in the header, the pages they may
// open), the message the last action left (a cookie read once), and the page sent as HTML.

import type { ServerResponse } from 'node:http';
import { isAuthenticated } from '../core/actor.ts';
import type { ApiRequest } from '../http/request.ts';
import { sendPage } from './document.ts';
import { type Html } from './html.ts';
import { type Account, type Flash, pageDocument } from './page-document.ts';
import type { PageSpec } from './page-spec.ts';
import type { SignIn } from './index-route.ts';

export interface PageSite {
  appTitle: string;
  /** Names the message cookie, as the app's other cookies are named. */
  appSlug: string;
  pages: readonly PageSpec[];
  signIn?: SignIn;
  /** Cookies are Secure in production. */
  production: boolean;
}

/** Whether the request's actor may open a page: `required` wants someone signed in (or an API key). */
export function mayOpen(page: PageSpec, req: ApiRequest): boolean {
  return page.auth !== 'required' || isAuthenticated(req.actor);
}

/** Where a page that wants a signed-in person sends someone who is not: sign in, then back. */
export function signInHref(site: PageSite, req: ApiRequest): string | undefined {
  return site.signIn && `${site.signIn.loginPath}?next=${encodeURIComponent(req.url ?? '/')}`;
}

/**
 * The pages a person may open from a link: those without parameters their sign-in allows, and the
 * sign-in page (layout `auth`) only to someone not signed in.
 */
export function pageLinks(pages: readonly PageSpec[]): (req: ApiRequest) => Array<{ href: string; title: string }> {
  const linked = pages.filter((p) => !p.path.includes(':'));
  return (req) =>
    linked
      .filter((p) => mayOpen(p, req) && !(p.layout === 'auth' && isAuthenticated(req.actor)))
      .map((p) => ({ href: p.path, title: p.title }));
}

export function sendView(
  site: PageSite,
  req: ApiRequest,
  res: ServerResponse,
  view: { status: number; title: string; main: Html; flash?: Flash },
): void {
  const current = (req.url ?? '/').split('?')[0];
  const nav = pageLinks(site.pages)(req).map((p) => ({ ...p, current: p.href === current }));
  const html = pageDocument(
    { appTitle: site.appTitle, title: view.title, nav, account: account(site, req, res), flash: view.flash },
    view.main,
  );
  // A page is this viewer's: never cached.
  sendPage(res, view.status, html, { private: true });
}

function account(site: PageSite, req: ApiRequest, res: ServerResponse): Account | undefined {
  const { signIn } = site;
  if (!signIn) return undefined;
  const actor = req.actor;
  if (actor?.kind === 'user' && typeof actor.email === 'string') {
    return {
      signedIn: true,
      email: actor.email,
      logoutAction: signIn.logoutAction,
      csrfToken: signIn.csrfToken(req, res),
    };
  }
  return { signedIn: false, loginHref: signInHref(site, req) as string };
}

/** The cookie of the message an action leaves for the page it redirects to. */
function flashCookie(site: PageSite): string {
  return `${site.appSlug}.flash`;
}

/** Leaves `flash` for the next page this browser opens (after the redirect of a POST). */
export function leaveFlash(site: PageSite, res: ServerResponse, flash: Flash): void {
  const value = encodeURIComponent(JSON.stringify(flash));
  res.appendHeader(
    'Set-Cookie',
    `${flashCookie(site)}=${value}; Path=/; Max-Age=60; HttpOnly; SameSite=Lax${site.production ? '; Secure' : ''}`,
  );
}

/** The message left for this page, once: the cookie is cleared as it is read. */
export function takeFlash(site: PageSite, req: ApiRequest, res: ServerResponse): Flash | undefined {
  const name = flashCookie(site);
  const cookie = (req.headers.cookie ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${name}=`));
  if (!cookie) return undefined;
  res.appendHeader(
    'Set-Cookie',
    `${name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${site.production ? '; Secure' : ''}`,
  );
  try {
    const parsed = JSON.parse(decodeURIComponent(cookie.slice(name.length + 1))) as Partial<Flash>;
    if ((parsed.kind === 'success' || parsed.kind === 'error') && typeof parsed.text === 'string') {
      // Only this origin sets the cookie, but it is still the browser's to send: shown as text, capped.
      return { kind: parsed.kind, text: parsed.text.slice(0, 500) };
    }
  } catch {
    // A malformed cookie says nothing.
  }
  return undefined;
}

/** After a POST: the page to GET next (303, so a reload does not post again). */
export function redirect(res: ServerResponse, location: string): void {
  res.statusCode = 303;
  res.setHeader('Location', location);
  res.setHeader('Cache-Control', 'no-store');
  res.end();
}
