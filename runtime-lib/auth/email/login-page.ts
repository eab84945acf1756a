// The sign-in page, its sign-up variant and the signed-in page (where a form sign-in lands by
// default): self-contained HTML documents (inline CSS, no scripts, no external assets) so they work
// under a CSP that allows nothing else. Every interpolated value is HTML-escaped.

import type { FieldType } from '../../core/values.ts';
import { escapeHtml, htmlDocument } from '../../pages/document.ts';

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

export function renderLoginPage(options: LoginPageOptions): string {
  const { action, csrfToken, error, email, next, alternate } = options;
  const invalid = error ? ' aria-invalid="true" aria-describedby="form-error"' : '';
  const fields = (options.fields ?? []).map(fieldInput).join('');
  return htmlDocument(
    options.title,
    `${error ? `<p class="error" id="form-error" role="alert">${escapeHtml(error)}</p>\n` : ''}\
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="_csrf" value="${escapeHtml(csrfToken)}">
${next ? `<input type="hidden" name="next" value="${escapeHtml(next)}">\n` : ''}<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254"
  value="${escapeHtml(email ?? '')}"${invalid}>
<label for="password">Password</label>
<input id="password" name="password" type="password" required maxlength="1024"
  autocomplete="${options.passwordAutocomplete ?? 'current-password'}"${invalid}>
${fields}<button type="submit">${escapeHtml(options.submitLabel ?? 'Sign in')}</button>
</form>
${alternate ? `<p class="alternate">${link(alternate.href, alternate.text)}</p>\n` : ''}`,
  );
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
