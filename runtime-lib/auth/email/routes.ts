// The routes of the email provider: the sign-in page (and its sign-up variant, and the signed-in
// page a form sign-in lands on), sign-in, sign-up (when auth.signup allows it), sign-out and the
// session endpoint. JSON callers get the error envelope; form posts get the page back. Each page
// is the blueprint's own template where [auth.pages] gives one; what the posts do is the same.

import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { type Actor, actorView, ANONYMOUS } from '../../core/actor.ts';
import { AppError } from '../../core/errors.ts';
import { checkBody } from '../../data/fields.ts';
import { matched } from '../../http/pipeline.ts';
import { type ApiRequest, pathOf } from '../../http/request.ts';
import { sendPage } from '../../pages/document.ts';
import { type CompiledTemplate, sendTemplateFailure, templateDocument } from '../../pages/template-context.ts';
import type { AnonymousTokens } from './csrf.ts';
import { clientKey, type SigninThrottle } from './signin-throttle.ts';
import { authBody, credentials, field, isForm, isPlainObject, queryParam } from './forms.ts';
import { valueFromText } from '../../data/field-text.ts';
import {
  type AuthPageTemplates,
  loginRequiredTemplateVariables,
  loginTemplateVariables,
  renderLoginPage,
  renderSignedInPage,
  type LoginPageOptions,
  type SignedInPageOptions,
  signedInTemplateVariables,
  type SignupInput,
} from './login-page.ts';
import { safeNext } from './origins.ts';
import { hashPassword, PASSWORD_MAX_LENGTH, passwordProblem, verifyPassword } from './password.ts';
import { emailTaken, type People } from './people.ts';
import type { SessionRequest, Sessions } from './session.ts';

export const AUTH_ROUTES = {
  signup: '/api/auth/signup',
  login: '/api/auth/login',
  logout: '/api/auth/logout',
  session: '/api/auth/session',
} as const;

/** `<loginPath>?mode=signup` shows the sign-up form (when sign-up is on). */
const SIGNUP_MODE = 'signup';

export interface RoutesOptions {
  people: People;
  loginPath: string;
  /** Shown on the pages. */
  title: string;
  /** auth.signup: people may create their own account. */
  signup: boolean;
  sessions: Sessions;
  anonymous: AnonymousTokens;
  /** Failed sign-ins per e-mail and per address, shared by every instance. */
  throttle: SigninThrottle;
  /** The session cookie is Secure: sign-in and sign-up need HTTPS (req.secure, see TRUST_PROXY). */
  secureCookies: boolean;
  /** [auth.pages]: the blueprint's own templates of these pages. */
  pages?: AuthPageTemplates;
}

export interface AuthRoutes {
  router: Router;
  /** The token a form of this request must carry: the session's, else the anonymous one. */
  formToken(req: SessionRequest, res: ServerResponse): string;
  /** The sign-in (or sign-up) form again, after a post with a stale or missing token. */
  expiredForm(req: ApiRequest, res: ServerResponse, path: string): void;
  /**
   * Answers someone not signed in who opened a page that needs a person: the blueprint's
   * loginRequired page (401) when it gives one, else a redirect to the sign-in page with `next`.
   */
  loginRequired(req: SessionRequest, res: ServerResponse, next: string): void;
}

export function authRoutes(options: RoutesOptions): AuthRoutes {
  const { people, loginPath, sessions, anonymous, throttle } = options;
  // Verified against when the e-mail is unknown, so that case costs the same scrypt work. Hashed in
  // libuv's thread pool while the app starts: synchronously it cost every boot about 40 ms.
  const dummyHash = hashPassword(randomBytes(16).toString('hex'));
  // Should hashing ever fail, the sign-in that awaits it answers 500; it must not crash the process first.
  dummyHash.catch(() => undefined);

  function formToken(req: SessionRequest, res: ServerResponse): string {
    return sessions.signedIn(req) ? sessions.token(req) : anonymous.issue(req, res);
  }

  /** The path to come back to with `next` (and the sign-up mode) kept. */
  function pageHref(next: string | undefined, signup: boolean): string {
    const params = new URLSearchParams();
    if (signup) params.set('mode', SIGNUP_MODE);
    if (next) params.set('next', next);
    const query = params.toString();
    return query ? `${loginPath}?${query}` : loginPath;
  }

  // The sign-in pages carry a CSRF token and the form's answers: never cached.
  function sendHtml(res: ServerResponse, status: number, html: string): void {
    sendPage(res, status, html, { private: true });
  }

  /** A page of the blueprint's own; one whose template fails is a logged 500 page. */
  function sendTemplate(
    req: SessionRequest,
    res: ServerResponse,
    status: number,
    page: { template: CompiledTemplate; title: string; variables: Record<string, unknown> },
  ): void {
    let html: string;
    try {
      html = page.template.render(page.variables);
    } catch (err) {
      sendTemplateFailure(res, err, { traceId: req.trace?.traceId, method: req.method, path: pathOf(req.url) });
      return;
    }
    sendHtml(res, status, templateDocument(page.title, html));
  }

  /** What the auth pages' templates are told of the app and the viewer. */
  const templateContext = (req: SessionRequest) => ({ appName: options.title, path: loginPath, actor: req.actor });

  /** The sign-in form, or the sign-up form (only when sign-up is on). */
  function sendForm(req: SessionRequest, res: ServerResponse, status: number, form: FormState = {}): void {
    const signup = options.signup && form.signup === true;
    const next = safeNext(req.method === 'GET' ? queryParam(req, 'next') : field(req.body, 'next'));
    const page: LoginPageOptions = {
      title: signup ? `Create an account for ${options.title}` : `Sign in to ${options.title}`,
      action: signup ? AUTH_ROUTES.signup : AUTH_ROUTES.login,
      csrfToken: formToken(req, res),
      error: form.error,
      email: form.email,
      next,
      ...(signup && people.signupFields.length ? { fields: signupInputs(form.values) } : {}),
      ...(signup ? { submitLabel: 'Create account', passwordAutocomplete: 'new-password' as const } : {}),
      ...(options.signup
        ? {
            alternate: signup
              ? { href: pageHref(next, false), text: 'Already have an account? Sign in' }
              : { href: pageHref(next, true), text: 'No account yet? Create one' },
          }
        : {}),
    };
    const template = signup ? options.pages?.signUp : options.pages?.signIn;
    if (!template) return sendHtml(res, status, renderLoginPage(page));
    sendTemplate(req, res, status, {
      template,
      title: page.title,
      variables: loginTemplateVariables(page, templateContext(req)),
    });
  }

  /** The sign-up form's inputs for the User record's fields, filled with what was sent. */
  function signupInputs(values: Record<string, string> = {}): SignupInput[] {
    return people.signupFields.map((f) => ({
      name: f.name,
      type: f.type,
      // Required and without a default: the form cannot be sent without it.
      required: f.required && f.default === undefined,
      values: f.values,
      value: Object.hasOwn(values, f.name) ? values[f.name] : undefined,
    }));
  }

  function expiredForm(req: ApiRequest, res: ServerResponse, path: string): void {
    sendForm(req, res, 403, {
      error: 'The form expired. Please try again.',
      email: field(req.body, 'email'),
      signup: path === AUTH_ROUTES.signup,
      values: sentValues(req.body),
    });
  }

  /**
   * A Secure cookie sent over plain HTTP is dropped by the browser: the person would get a token
   * and no session, while a session row is stored for nobody. Refused before anything is read or
   * counted, so the request stores nothing.
   */
  function requireHttps(req: Request): void {
    if (options.secureCookies && !req.secure) {
      throw new AppError(
        'HTTPS_REQUIRED',
        'signing in needs HTTPS: the session cookie is Secure in production; ' +
          'behind a TLS proxy, set TRUST_PROXY so the app believes its X-Forwarded-Proto',
      );
    }
  }

  /**
   * A request with an Authorization header never reaches the session middleware (session.ts: API
   * keys skip it), so it cannot start a session: refused before anything is read or stored, or a
   * sign-up would store the person and then fail.
   */
  function requireNoCredential(req: Request): void {
    if (req.headers.authorization !== undefined) {
      const message = 'signing in or up starts a browser session: send no Authorization header';
      throw new AppError('SESSION_WITH_API_KEY', message);
    }
  }

  async function signedIn(req: Request, res: Response, status: number, actor: Actor): Promise<void> {
    await sessions.start(req, actor.id);
    req.actor = actor;
    if (isForm(req)) {
      // Without a `next`, the sign-in page itself, which now shows who is signed in.
      res.redirect(303, safeNext(field(req.body, 'next')) ?? loginPath);
      return;
    }
    res.status(status).json({ actor: actorView(actor), csrfToken: sessions.token(req) });
  }

  /** Form posts get the page back with the message; JSON callers get the error envelope. */
  function failed(err: unknown, req: Request, res: Response, next: NextFunction, signup: boolean): void {
    if (!(isForm(req) && err instanceof AppError && err.status < 500)) return next(err);
    if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter));
    const email = field(req.body, 'email')?.trim();
    sendForm(req, res, err.status, { error: err.message, email, signup, values: sentValues(req.body) });
  }

  /**
   * The User fields of a sign-up body: everything but the sign-in keys. A form sends text, which
   * becomes the value of the field's type (an empty input: no value, so the default applies).
   */
  function signupFields(req: Request): Record<string, unknown> {
    // Prototype keys are refused, never copied (checkBody).
    const body = checkBody(req.body);
    const out: Record<string, unknown> = {};
    const form = isForm(req);
    for (const [name, value] of Object.entries(body)) {
      if (SIGN_IN_KEYS.has(name)) continue;
      if (!form) {
        out[name] = value;
        continue;
      }
      const spec = people.signupFields.find((f) => f.name === name);
      if (typeof value !== 'string' || value === '') continue;
      if (!spec) {
        out[name] = value;
        continue;
      }
      const parsed = valueFromText(spec, value);
      if (!parsed.ok) {
        throw new AppError('VALIDATION_FAILED', parsed.message, {
          details: [{ field: name, code: 'INVALID_VALUE', message: parsed.message }],
        });
      }
      out[name] = parsed.value;
    }
    return out;
  }

  const router = Router();
  router.use('/api/auth', (_req, res, next) => {
    // Answers carry CSRF tokens and identities: never cache them.
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  router.get(loginPath, matched('auth.loginPage'), (req, res) => {
    if (req.actor?.kind === 'user' && typeof req.actor.email === 'string') {
      const page: SignedInPageOptions = {
        title: `Signed in to ${options.title}`,
        email: req.actor.email,
        csrfToken: sessions.token(req),
        logoutAction: AUTH_ROUTES.logout,
        next: safeNext(queryParam(req, 'next')),
      };
      const template = options.pages?.signOut;
      if (!template) return sendHtml(res, 200, renderSignedInPage(page));
      return sendTemplate(req, res, 200, {
        template,
        title: page.title,
        variables: signedInTemplateVariables(page, templateContext(req)),
      });
    }
    sendForm(req, res, 200, { signup: queryParam(req, 'mode') === SIGNUP_MODE });
  });

  router.get(AUTH_ROUTES.session, matched('auth.session'), (req, res) => {
    const actor = req.actor ?? ANONYMOUS;
    // API-key callers skip CSRF, so they get no token.
    res.json({ actor: actorView(actor), csrfToken: actor.kind === 'agent' ? null : formToken(req, res) });
  });

  router.post(AUTH_ROUTES.login, matched('auth.login'), authBody, async (req, res, next) => {
    try {
      requireNoCredential(req);
      requireHttps(req);
      const { address, password } = credentials(req.body);
      const email = address.normalized;
      if ([...password].length > PASSWORD_MAX_LENGTH)
        throw new AppError('VALIDATION_FAILED', `the password must be at most ${PASSWORD_MAX_LENGTH} characters long`);
      const ip = clientKey(req);
      // Counted before the slow hash, so parallel guesses cannot all slip past the limit; a
      // success takes it back below.
      const wait = await throttle.attempt(email, ip, req.trace);
      if (wait > 0) throw tooManyAttempts(wait);
      const person = await people.login(req.trace, address);
      const ok = await verifyPassword(password, person?.passwordHash ?? (await dummyHash));
      // Read again after the hash: the person may have been removed meanwhile.
      const actor = person && ok ? await people.actor(req.trace, person.id) : undefined;
      if (!actor) throw new AppError('INVALID_CREDENTIALS', 'the e-mail or password is incorrect');
      await throttle.succeeded(email, ip, req.trace);
      await signedIn(req, res, 200, actor);
    } catch (err) {
      failed(err, req, res, next, false);
    }
  });

  // With auth.signup = false the route does not exist: the request is a 404 like any unknown one.
  if (options.signup) {
    router.post(AUTH_ROUTES.signup, matched('auth.signup'), authBody, async (req, res, next) => {
      try {
        requireNoCredential(req);
        requireHttps(req);
        const { address, password } = credentials(req.body);
        const problem = passwordProblem(password);
        if (problem) throw new AppError('WEAK_PASSWORD', problem);
        const fields = signupFields(req);
        const ip = clientKey(req);
        const wait = await throttle.addressWait(ip, req.trace);
        if (wait > 0) throw tooManyAttempts(wait);
        // Sign-up has to say the e-mail is taken; counting that per IP slows down probing with it.
        const taken = async (err: unknown): Promise<unknown> => {
          if (err instanceof AppError && err.code === 'EMAIL_TAKEN') await throttle.addressFailed(ip, req.trace);
          return err;
        };
        if (await people.emailTaken(req.trace, address)) throw await taken(emailTaken());
        const passwordHash = await hashPassword(password);
        let actor: Actor;
        try {
          actor = await people.signUp(req.trace, address.normalized, fields, passwordHash);
        } catch (err) {
          // Another sign-up with the same e-mail may have won the race while this one was hashing.
          throw await taken(err);
        }
        await signedIn(req, res, 201, actor);
      } catch (err) {
        failed(err, req, res, next, true);
      }
    });
  }

  router.post(AUTH_ROUTES.logout, matched('auth.logout'), async (req, res, next) => {
    try {
      await sessions.end(req, res);
    } catch (err) {
      return next(err);
    }
    if (isForm(req)) res.redirect(303, loginPath);
    else res.status(204).end();
  });

  function loginRequired(req: SessionRequest, res: ServerResponse, next: string): void {
    const loginUrl = pageHref(safeNext(next), false);
    const template = options.pages?.loginRequired;
    if (!template) {
      res.statusCode = 303;
      res.setHeader('Location', loginUrl);
      res.end();
      return;
    }
    sendTemplate(req, res, 401, {
      template,
      title: 'Sign in required',
      variables: loginRequiredTemplateVariables({
        ...templateContext(req),
        path: pathOf(req.url),
        csrfToken: formToken(req, res),
        loginUrl,
      }),
    });
  }

  return { router, formToken, expiredForm, loginRequired };
}

interface FormState {
  error?: string;
  email?: string;
  signup?: boolean;
  /** The sign-up form's other inputs as sent, to fill the form again. */
  values?: Record<string, string>;
}

/** Keys of the sign-in and sign-up bodies that are not fields of a User record. */
const SIGN_IN_KEYS = new Set(['email', 'password', 'next', '_csrf']);

function sentValues(body: unknown): Record<string, string> {
  if (!isPlainObject(body)) return {};
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(body)) {
    if (!SIGN_IN_KEYS.has(name) && typeof value === 'string') out[name] = value;
  }
  return out;
}

function tooManyAttempts(waitMs: number): AppError {
  const seconds = Math.ceil(waitMs / 1000);
  return new AppError(
    'TOO_MANY_ATTEMPTS',
    `too many failed attempts; try again in ${seconds} second${seconds === 1 ? '' : 's'}`,
    { retryAfter: seconds },
  );
}
