// Requests to a generated app's pages as a browser makes them: a GET that does not follow
// redirects, and a form posted urlencoded with the session's CSRF token and a same-origin Origin.

import type { RunningApp, Session } from './apps.ts';

/** GET a page as `session` (or nobody), with `cookie` besides (a message cookie), redirects not followed. */
export async function getPage(app: RunningApp, urlPath: string, session?: Session, cookie = ''): Promise<Response> {
  const cookies = [session?.cookie, cookie].filter(Boolean).join('; ');
  return fetch(app.url + urlPath, { headers: cookies ? { cookie: cookies } : {}, redirect: 'manual' });
}

/** A form posted to a page: urlencoded, with the session's token unless `csrf` is false. */
export async function postPage(
  app: RunningApp,
  urlPath: string,
  session: Session,
  fields: Record<string, string>,
  csrf = true,
): Promise<Response> {
  return fetch(app.url + urlPath, {
    method: 'POST',
    headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: app.url },
    body: new URLSearchParams({ ...(csrf ? { _csrf: session.csrfToken } : {}), ...fields }),
    redirect: 'manual',
  });
}
