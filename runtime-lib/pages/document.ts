// The document every server-rendered page of the app is (the index here, the sign-in pages of
// auth/email/login-page.ts): self-contained HTML (inline CSS, no scripts, no external assets),
// readable on a phone and in dark mode, with visible focus, so it works under PAGE_CSP.

import type { ServerResponse } from 'node:http';
import { liveReloadPage } from './live-reload.ts';

/** Served with every page: no scripts at all, forms may only post to this origin, no framing. */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

/**
 * Sends a page with the headers every page has: PAGE_CSP, no MIME sniffing, no framing, no
 * referrer to other origins; `private` when it depends on the session, so no cache keeps it.
 */
export function sendPage(res: ServerResponse, status: number, html: string, opts: { private: boolean }): void {
  // In development through bp dev, a loopback request's page also carries the live reload script.
  const live = liveReloadPage(res, PAGE_CSP, html);
  res.statusCode = status;
  res.setHeader('Content-Security-Policy', live?.csp ?? PAGE_CSP);
  if (opts.private) res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(live?.html ?? html);
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;
  font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1f2328}
main{width:100%;max-width:24rem;margin:1rem;padding:2rem;background:#fff;border:1px solid #d0d7de;border-radius:.5rem}
h1{margin:0 0 1.5rem;font-size:1.5rem}
label{display:block;margin:1rem 0 .25rem;font-weight:600}
input,select,textarea{width:100%;padding:.6rem .75rem;font:inherit;border:1px solid #8c959f;border-radius:.375rem}
input[type=checkbox]{width:auto}
input:focus,button:focus{outline:3px solid #0969da;outline-offset:2px}
button{margin-top:1.5rem;width:100%;padding:.7rem;font:inherit;font-weight:600;color:#fff;background:#1f6feb;
  border:0;border-radius:.375rem;cursor:pointer}
button:hover{background:#0b57d0}
a{color:#0969da}
.alternate{margin:1.25rem 0 0;text-align:center}
.error{margin:0 0 1rem;padding:.75rem;color:#82071e;background:#ffebe9;border:1px solid #ff8182;border-radius:.375rem}
@media (prefers-color-scheme:dark){
  body{background:#0d1117;color:#e6edf3}
  main{background:#161b22;border-color:#30363d}
  input,select,textarea{background:#0d1117;color:#e6edf3;border-color:#6e7681}
  a{color:#4493f8}
  .error{color:#ffdcd7;background:#5a1e1e;border-color:#f85149}
}
`;

/** A whole page: `title` is both the document's title and its heading, above `body` (HTML). */
export function htmlDocument(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}</main>
</body>
</html>
`;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}
