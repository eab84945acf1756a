// GET (and HEAD) `/`: the app's index page (index-page.ts), for people opening the app in a
// browser, rather than the API's 404. Its name and description are the OpenAPI document's. The
// sign-in it offers is the e-mail provider's, handed in by the app: nothing here imports auth/, so
// an app without sign-in copies none of it.

import type { ServerResponse } from 'node:http';
import { Router } from 'express';
import { matched } from '../http/pipeline.ts';
import type { ApiRequest } from '../http/request.ts';
import { sendPage } from './document.ts';
import { renderIndexPage, type IndexPageOptions } from './index-page.ts';

export const INDEX_PATH = '/';

export interface IndexRouteOptions {
  /** The app's openapi.json: its info names the app, and the page links to it. */
  api: { info: { title: string; description?: string } };
  /** The e-mail provider's sign-in, when the app has it. */
  signIn?: SignIn;
  /** The blueprint's pages this person may open (page-view.ts pageLinks), listed on the page. */
  pages?: (req: ApiRequest) => ReadonlyArray<{ href: string; title: string }>;
}

export interface SignIn {
  /** The sign-in page. */
  loginPath: string;
  /** auth.signup: the sign-in page offers its sign-up form. */
  signup: boolean;
  /** Where the sign-out form posts. */
  logoutAction: string;
  /** The provider's token for a form of this request (the session's when signed in). */
  csrfToken(req: ApiRequest, res: ServerResponse): string;
  /**
   * [auth.pages]: answers someone not signed in who opened a page that needs a person (the
   * blueprint's loginRequired page, else the redirect to sign in and back to `next`).
   */
  loginRequired?(req: ApiRequest, res: ServerResponse, next: string): void;
}

export function indexRoute(options: IndexRouteOptions): Router {
  const { api, signIn } = options;
  const router = Router();
  router.get(INDEX_PATH, matched('index'), (req, res) => {
    const page: IndexPageOptions = {
      title: api.info.title,
      description: api.info.description,
      apiDocs: '/api/openapi.json',
      pages: options.pages?.(req) ?? [],
    };
    if (signIn) page.account = account(signIn, req, res);
    // With sign-in the page shows who is signed in, and the pages they may open: never cached.
    sendPage(res, 200, renderIndexPage(page), { private: signIn !== undefined });
  });
  return router;
}

/** Who is signed in, by the verified session only (req.actor, which the pipeline resolved). */
function account(signIn: SignIn, req: ApiRequest, res: ServerResponse): IndexPageOptions['account'] {
  const actor = req.actor;
  if (actor?.kind === 'user' && typeof actor.email === 'string') {
    return {
      signedIn: true,
      email: actor.email,
      csrfToken: signIn.csrfToken(req, res),
      logoutAction: signIn.logoutAction,
    };
  }
  // Back here once signed in (or up); `mode=signup` is the sign-in page's sign-up form (auth/email/routes.ts).
  const next = `next=${encodeURIComponent(INDEX_PATH)}`;
  return {
    signedIn: false,
    loginHref: `${signIn.loginPath}?${next}`,
    signupHref: signIn.signup ? `${signIn.loginPath}?mode=signup&${next}` : undefined,
  };
}
