// Where a request comes from and where a sign-in may send the browser next: the app's own
// origin and auth.trustedOrigins are trusted; redirects stay on this site.

import type { ApiRequest } from '../../http/request.ts';

export function parseOrigin(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (
    !url ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.origin !== value.replace(/\/$/, '').toLowerCase()
  ) {
    throw new Error(
      `auth.trustedOrigins: "${value}" is not an origin such as https://app.example.com ` +
        '(scheme, host and optional port only)',
    );
  }
  return url.origin;
}

/**
 * The app's own origin (as the request reached it) is always trusted. Behind the production
 * proxy, the scheme is the one X-Forwarded-Proto reports: a forged one cannot help a cross-site
 * request, whose headers the attacker's page does not set (the Origin is the browser's).
 */
export function originAllowed(req: ApiRequest, origin: string, trusted: Set<string>, behindProxy: boolean): boolean {
  if (trusted.has(origin)) return true;
  const host = req.headers.host;
  if (!host) return false;
  const forwarded = behindProxy ? req.headers['x-forwarded-proto'] : undefined;
  const protocol =
    'encrypted' in req.socket && req.socket.encrypted
      ? 'https'
      : typeof forwarded === 'string'
        ? forwarded.split(',', 1)[0].trim()
        : 'http';
  try {
    return new URL(`${protocol}://${host}`).origin === origin;
  } catch {
    return false;
  }
}

/** A same-site path to go to after signing in; anything that could leave the site is dropped. */
export function safeNext(value: unknown): string | undefined {
  if (typeof value !== 'string' || !value.startsWith('/') || value.length > 2048) return undefined;
  // "//host" and "/\host" are protocol-relative to browsers; controls could smuggle either.
  if (value.startsWith('//') || value.startsWith('/\\') || /[\p{Cc}]/u.test(value)) return undefined;
  const url = new URL(value, 'http://same.invalid');
  // Dot segments can collapse into a leading "//" ("/.//evil.example"), so check what is left.
  if (url.origin !== 'http://same.invalid' || url.pathname.startsWith('//')) return undefined;
  return url.pathname + url.search + url.hash;
}
