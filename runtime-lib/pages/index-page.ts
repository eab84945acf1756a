// The app's index, served at `/` (issue 28): its name and description, sign-in or who is signed
// in, and the API's description. A self-contained document like the sign-in page (document.ts);
// every interpolated value is HTML-escaped.

import { escapeHtml, htmlDocument } from './document.ts';

export interface IndexPageOptions {
  /** The app's name: the heading and the document title. */
  title: string;
  description?: string;
  /** Only for an app with e-mail sign-in. */
  account?: SignedOut | SignedIn;
  /** Where the API's description is served. */
  apiDocs: string;
  /** The blueprint's pages this person may open. */
  pages: ReadonlyArray<{ href: string; title: string }>;
}

export interface SignedOut {
  signedIn: false;
  loginHref: string;
  /** When people may create their own account. */
  signupHref?: string;
}

export interface SignedIn {
  signedIn: true;
  email: string;
  /** The session's token, for the sign-out form. */
  csrfToken: string;
  /** Where the sign-out form posts. */
  logoutAction: string;
}

export function renderIndexPage(options: IndexPageOptions): string {
  const { description, account, pages } = options;
  const list = pages.length
    ? `<nav aria-label="Pages"><ul>
${pages.map((p) => `<li><a href="${escapeHtml(p.href)}">${escapeHtml(p.title)}</a></li>\n`).join('')}</ul></nav>
`
    : '';
  return htmlDocument(
    options.title,
    `${description ? `<p>${escapeHtml(description)}</p>\n` : ''}${account ? accountSection(account) : ''}${list}\
<p><a href="${escapeHtml(options.apiDocs)}">The API's description (OpenAPI)</a></p>
`,
  );
}

function accountSection(account: SignedOut | SignedIn): string {
  if (!account.signedIn) {
    const signup = account.signupHref ? ` or <a href="${escapeHtml(account.signupHref)}">create an account</a>` : '';
    return `<p><a href="${escapeHtml(account.loginHref)}">Sign in</a>${signup}.</p>\n`;
  }
  return `<p>Signed in as <strong id="signed-in-email">${escapeHtml(account.email)}</strong>.</p>
<form method="post" action="${escapeHtml(account.logoutAction)}">
<input type="hidden" name="_csrf" value="${escapeHtml(account.csrfToken)}">
<button type="submit">Sign out</button>
</form>
`;
}
