// Development live reload (`bp dev`, docs/bp-dev.md): when the app runs with BP_LIVE_RELOAD_PORT
// outside production, every HTML page opened through a loopback name (localhost, 127.0.0.1, [::1])
// carries a small inline script that connects to bp dev's WebSocket on that port: it reloads the
// page when the app was rebuilt, and shows bp dev's overlay (the blueprint's diagnostics, or a
// destructive schema change waiting for confirmation). Other host names, production, and every
// response that is not a page (the API's JSON) are never altered.

import { randomBytes } from 'node:crypto';
import type { RequestListener, ServerResponse } from 'node:http';
import { loopbackHostname } from '../core/loopback.ts';

/**
 * The loopback names a browser on this machine opens the app through, whose WebSocket reaches bp
 * dev's admin port (it listens on 127.0.0.1, localhost or ::1, not on all of 127.0.0.0/8).
 */
const LIVE_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
/** bp dev's WebSocket path on its admin port. */
const CHANNEL_PATH = '/live-reload';

/** The responses of requests that came through a loopback name, and the hostname they used. */
const loopbackRequests = new WeakMap<ServerResponse, string>();

/** bp dev's port, when this app should carry the script: set, valid, and not in production. */
export function liveReloadPort(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.BP_LIVE_RELOAD_PORT;
  if (env.NODE_ENV === 'production' || raw === undefined || !/^\d{1,5}$/.test(raw)) return undefined;
  const port = Number(raw);
  return port > 0 && port <= 65535 ? port : undefined;
}

/**
 * The app's request listener, marking the responses of loopback requests so that sendPage
 * (document.ts) adds the script to them. Returns `handle` itself when live reload is off.
 */
export function withLiveReload(handle: RequestListener, env: NodeJS.ProcessEnv): RequestListener {
  const port = liveReloadPort(env);
  if (port === undefined) return handle;
  return (req, res) => {
    const hostname = loopbackHostname(req.headers.host);
    if (hostname !== undefined && LIVE_HOSTNAMES.has(hostname))
      loopbackRequests.set(res, `ws://${hostname}:${port}${CHANNEL_PATH}`);
    handle(req, res);
  };
}

/**
 * For a page's response: the CSP with the script's nonce and bp dev's WebSocket allowed, and the
 * document with the script before </body>; undefined when this response gets no script.
 */
export function liveReloadPage(
  res: ServerResponse,
  csp: string,
  html: string,
): { csp: string; html: string } | undefined {
  const channel = loopbackRequests.get(res);
  if (channel === undefined) return undefined;
  const nonce = randomBytes(16).toString('base64');
  const script = `<script nonce="${nonce}">${clientScript(channel)}</script>\n`;
  const end = html.lastIndexOf('</body>');
  return {
    csp: `${csp}; script-src 'nonce-${nonce}'; connect-src ${channel}`,
    html: end < 0 ? html + script : html.slice(0, end) + script + html.slice(end),
  };
}

/**
 * The browser's side. Messages (JSON): `hello` with bp dev's session and build (a page reloads when
 * they differ from those it first saw: the app was rebuilt while it was disconnected), `reload`,
 * `overlay` (title and text, shown as text, never as HTML) and `clear`. Reconnects every 500 ms
 * while bp dev is away.
 */
function clientScript(channel: string): string {
  return `(() => {
const url = ${JSON.stringify(channel)};
let seen;
let box;
function hide() { if (box) { box.remove(); box = undefined; } }
function show(m) {
  hide();
  // In a shadow root: the page's own styles (buttons, headings) do not reach the overlay.
  box = document.createElement('div');
  box.id = 'bp-dev-overlay';
  const root = box.attachShadow({ mode: 'open' });
  const panel = document.createElement('section');
  panel.setAttribute('role', 'alertdialog');
  panel.setAttribute('aria-label', m.title);
  panel.style.cssText = 'position:fixed;inset:0;z-index:2147483647;overflow:auto;padding:1.5rem 2rem;' +
    'background:rgba(13,17,23,.96);color:#e6edf3;font:14px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace';
  const h = document.createElement('h2');
  h.textContent = m.title;
  h.style.cssText = 'margin:0 6rem 1rem 0;font:600 1.2rem/1.4 system-ui,sans-serif;color:' +
    (m.kind === 'destructive' ? '#f2cc60' : '#ff7b72');
  const pre = document.createElement('pre');
  pre.style.cssText = 'margin:0;white-space:pre-wrap;overflow-wrap:anywhere;font:inherit';
  // The text as the terminal shows it; errors, warnings and hints told apart by colour only.
  for (const line of m.text.split(/(?<=\\n)/)) {
    const span = document.createElement('span');
    span.textContent = line;
    span.style.color = line.includes('[error ') ? '#ff7b72' : line.includes('[warning ') ? '#e3b341' :
      line.startsWith('  hint: ') ? '#9198a1' : '';
    pre.append(span);
  }
  const close = document.createElement('button');
  close.textContent = 'Close';
  close.style.cssText = 'position:absolute;top:1.25rem;right:2rem;padding:.3rem .8rem;font:14px system-ui,sans-serif;' +
    'color:#e6edf3;background:#30363d;border:1px solid #6e7681;border-radius:.3rem;cursor:pointer';
  close.onclick = hide;
  panel.append(close, h, pre);
  root.append(panel);
  document.body.append(box);
}
function connect() {
  const ws = new WebSocket(url);
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.type === 'hello') {
      const now = m.session + '/' + m.build;
      if (seen !== undefined && seen !== now) location.reload();
      seen = now;
    } else if (m.type === 'reload') location.reload();
    else if (m.type === 'overlay') show(m);
    else if (m.type === 'clear') hide();
  };
  ws.onclose = () => setTimeout(connect, 500);
}
connect();
})();`;
}
