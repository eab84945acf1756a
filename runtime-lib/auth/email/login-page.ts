// The sign-in page, its sign-up variant and the signed-in page (where a form sign-in lands by
// default): self-contained HTML documents (inline CSS, no scripts, no external assets) so they work
// under a CSP that allows nothing else. Every interpolated value is HTML-escaped. Also what the
// blueprint's own templates of these pages ([auth.pages]) are given: the same form parts, as
// HTML the template writes as it is, and the values they are made of.

import type { Actor } from '../../core/actor.ts';
import type { FieldType } from '../../core/values.ts';
import { escapeHtml, htmlDocument } from '../../pages/document.ts';
import { type CompiledTemplate, SafeHtml, templateVariables } from '../../pages/template-context.ts';

export interface LoginPageOptions {
  /** Heading and document title, e.g. "Sign in to Helpdesk". */
  title: string;
  /** Where the form posts, e.g. /api/auth/login. */
  action: string;
  csrfToken: string;
  /** Shown above the form and announced to screen readers. */
  error?: string;
  /** Pre-filled after a failed attempt. */
  email?: string;
  /** Relative path to go to after signing in. */
  next?: string;
  /** Text of the submit button; "Sign in" unless the page posts elsewhere (e.g. sign-up). */
  submitLabel?: string;
  /** autocomplete hint of the password field: current-password to sign in, new-password to sign up. */
  passwordAutocomplete?: 'current-password' | 'new-password';
  /** A link below the form to the other page (sign-up from sign-in and back), when sign-up is on. */
  alternate?: { href: string; text: string };
  /** Sign-up only: inputs for the fields of the User record, after e-mail and password. */
  fields?: readonly SignupInput[];
}

/** One field of the User record on the sign-up form. */
export interface SignupInput {
  name: string;
  type: FieldType;
  required: boolean;
  /** An Enum's values: a choice. */
  values?: readonly string[];
  /** What was sent, to fill the form again. */
  value?: string;
}

export interface SignedInPageOptions {
  title: string;
  email: string;
  /** The session's token, for the sign-out form. */
  csrfToken: string;
  /** Where the sign-out form posts, e.g. /api/auth/logout. */
  logoutAction: string;
  /** Relative path the person asked for: offered as a link. */
  next?: string;
}

/** The pieces of the sign-in (or sign-up) form, each HTML with its values escaped. */
interface FormParts {
  /** The message above the form, announced to screen readers; '' without one. */
  feedback: string;
  /** The hidden inputs: the CSRF token and `next`. */
  hidden: string;
  email: string;
  password: string;
  /** Sign-up: the inputs of the User record's fields, by field name. */
  fields: Record<string, string>;
}

function formParts(options: LoginPageOptions): FormParts {
  const { csrfToken, error, email, next } = options;
  const invalid = error ? ' aria-invalid="true" aria-describedby="form-error"' : '';
  return {
    feedback: error ? `<p class="error" id="form-error" role="alert">${escapeHtml(error)}</p>\n` : '',
    hidden: `<input type="hidden" name="_csrf" value="${escapeHtml(csrfToken)}">
${next ? `<input type="hidden" name="next" value="${escapeHtml(next)}">\n` : ''}`,
    email: `<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254"
  value="${escapeHtml(email ?? '')}"${invalid}>
`,
    password: `<label for="password">Password</label>
<input id="password" name="password" type="password" required maxlength="1024"
  autocomplete="${options.passwordAutocomplete ?? 'current-password'}"${invalid}>
`,
    fields: Object.fromEntries((options.fields ?? []).map((f) => [f.name, fieldInput(f)])),
  };
}

export function renderLoginPage(options: LoginPageOptions): string {
  const { action, alternate } = options;
  const parts = formParts(options);
  return htmlDocument(
    options.title,
    `${parts.feedback}<form method="post" action="${escapeHtml(action)}">
${parts.hidden}${parts.email}${parts.password}${Object.values(parts.fields).join('')}\
<button type="submit">${escapeHtml(options.submitLabel ?? 'Sign in')}</button>
</form>
${alternate ? `<p class="alternate">${link(alternate.href, alternate.text)}</p>\n` : ''}`,
  );
}

/** The blueprint's own pages ([auth.pages]), each compiled when the app starts. */
export interface AuthPageTemplates {
  signIn?: CompiledTemplate;
  signUp?: CompiledTemplate;
  /** The page at the login path for someone signed in: who they are and the sign-out form. */
  signOut?: CompiledTemplate;
  /** A page that needs a signed-in person, opened by someone who is not: instead of the redirect. */
  loginRequired?: CompiledTemplate;
}

/** What every auth page's template is told besides its own: the app, the page and the viewer. */
interface AuthPageContext {
  appName: string;
  /** Where the page is served (the login path; the asked-for page's path for loginRequired). */
  path: string;
  title: string;
  csrfToken: string;
  actor?: Actor;
}

function authVariables(
  context: AuthPageContext,
  auth: Record<string, unknown>,
  renderer = {},
): Record<string, unknown> {
  return {
    ...templateVariables({
      page: { path: context.path, title: context.title },
      data: {},
      actor: context.actor,
      csrfToken: context.csrfToken,
    }),
    // Zebric's auth templates read project.name and auth.*, and write renderer.* (HTML) with `| raw`.
    project: { name: context.appName },
    auth: { csrfToken: context.csrfToken, ...auth },
    renderer,
  };
}

/**
 * The variables of a sign-in or sign-up template: `auth.action` (where the form posts, with
 * `email`, `password`, `_csrf` and `next`), `auth.next` (also Zebric's `auth.callback`),
 * `auth.error`, `auth.email`, `auth.signupPath` (sign-in, when people may sign up) or
 * `auth.loginPath` (sign-up), and the built-in form's parts as HTML: `renderer.feedback`,
 * `renderer.hidden` and `renderer.fields.<name>` (email, password, the User record's fields).
 */
export function loginTemplateVariables(
  options: LoginPageOptions,
  context: Omit<AuthPageContext, 'csrfToken' | 'title'>,
): Record<string, unknown> {
  const parts = formParts(options);
  const alternate = options.alternate?.href;
  const signup = options.passwordAutocomplete === 'new-password';
  return authVariables(
    { ...context, title: options.title, csrfToken: options.csrfToken },
    {
      action: options.action,
      next: options.next ?? '',
      callback: options.next ?? '',
      error: options.error ?? '',
      email: options.email ?? '',
      ...(alternate === undefined ? {} : signup ? { loginPath: alternate } : { signupPath: alternate }),
    },
    {
      feedback: new SafeHtml(parts.feedback),
      hidden: new SafeHtml(parts.hidden),
      fields: Object.fromEntries(
        Object.entries({ email: parts.email, password: parts.password, ...parts.fields }).map(([k, v]) => [
          k,
          new SafeHtml(v),
        ]),
      ),
    },
  );
}

/**
 * The variables of the sign-out template (the login path, signed in): `auth.action` (the sign-out
 * form posts there with `_csrf`), `auth.email`, `auth.next` (also `auth.callback`), and `user`.
 */
export function signedInTemplateVariables(
  options: SignedInPageOptions,
  context: Omit<AuthPageContext, 'csrfToken' | 'title'>,
): Record<string, unknown> {
  return authVariables(
    { ...context, title: options.title, csrfToken: options.csrfToken },
    { action: options.logoutAction, email: options.email, next: options.next ?? '', callback: options.next ?? '' },
  );
}

/** The variables of the login-required template: `page.path` (the page asked for) and `auth.loginUrl`. */
export function loginRequiredTemplateVariables(
  context: Omit<AuthPageContext, 'title'> & { loginUrl: string },
): Record<string, unknown> {
  return authVariables({ ...context, title: 'Sign in required' }, { loginUrl: context.loginUrl });
}

/** Who is signed in, a link on to where they were going, and a sign-out button. */
export function renderSignedInPage(options: SignedInPageOptions): string {
  const { email, csrfToken, logoutAction, next } = options;
  return htmlDocument(
    options.title,
    `<p>Signed in as <strong id="signed-in-email">${escapeHtml(email)}</strong>.</p>
${next ? `<p>${link(next, `Continue to ${next}`)}</p>\n` : ''}\
<form method="post" action="${escapeHtml(logoutAction)}">
<input type="hidden" name="_csrf" value="${escapeHtml(csrfToken)}">
<button type="submit">Sign out</button>
</form>
`,
  );
}

/** The input of one User field: a choice for an Enum, a box for a Boolean, text for the rest. */
function fieldInput(input: SignupInput): string {
  const id = `field-${escapeHtml(input.name)}`;
  const name = escapeHtml(input.name);
  const required = input.required ? ' required' : '';
  const label = `<label for="${id}">${name}</label>\n`;
  const value = input.value ?? '';
  if (input.type === 'Boolean') {
    const checked = value === 'true' ? ' checked' : '';
    return `${label}<input id="${id}" name="${name}" type="checkbox" value="true"${checked}>\n`;
  }
  if (input.type === 'Enum' && input.values?.length) {
    const options = ['', ...input.values].map((v) => {
      const selected = v === value ? ' selected' : '';
      return `<option value="${escapeHtml(v)}"${selected}>${escapeHtml(v)}</option>`;
    });
    return `${label}<select id="${id}" name="${name}"${required}>${options.join('')}</select>\n`;
  }
  if (input.type === 'LongText')
    return `${label}<textarea id="${id}" name="${name}"${required}>${escapeHtml(value)}</textarea>\n`;
  const type = INPUT_TYPES[input.type] ?? 'text';
  // A number input takes whole numbers unless told otherwise.
  const step = input.type === 'Float' ? ' step="any"' : '';
  return `${label}<input id="${id}" name="${name}" type="${type}"${step}${required} value="${escapeHtml(value)}">\n`;
}

/** HTML input types for field types whose values a browser helps with; text for the others. */
const INPUT_TYPES: Partial<Record<FieldType, string>> = {
  Email: 'email',
  Date: 'date',
  Integer: 'number',
  Float: 'number',
};

function link(href: string, text: string): string {
  return `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;
}
