// The `fetch` a plugin that declared `network` gets: the platform's fetch, behind the address
// guard of webhook steps (workflows/outbound-address.ts). In production a request to a name that
// resolves to a loopback, private, link-local or reserved address is refused before it is sent,
// and so is each redirect's target (redirects are followed here, five at most, each checked).
// The name is resolved again by fetch itself when it connects: a name whose answers change between
// the check and the connection (DNS rebinding) is not covered, as the webhook step's pinned
// address covers it; plugins that need that guarantee should not take `network`.

import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { AppError } from '../core/errors.ts';
import { isBlockedAddress } from '../workflows/outbound-address.ts';

const MAX_REDIRECTS = 5;

export function guardedFetch(plugin: string, blockPrivate: boolean): typeof fetch {
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    let request = init;
    for (let hop = 0; ; hop++) {
      await checkTarget(plugin, url, blockPrivate);
      const response = await fetch(url, { ...request, redirect: 'manual' });
      const location = response.headers.get('location');
      if (![301, 302, 303, 307, 308].includes(response.status) || location === null) return response;
      if (hop === MAX_REDIRECTS) throw new Error(`plugin "${plugin}": ${url.host} redirected more than 5 times`);
      // 303, and 301/302 after a POST, go on as a GET without a body (as fetch does).
      const method = (request?.method ?? 'GET').toUpperCase();
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST'))
        request = { ...request, method: 'GET', body: undefined };
      const next = new URL(location, url);
      // Credentials in headers go to the origin the plugin named, not to one it is sent on to.
      if (next.origin !== url.origin) request = { ...request, headers: undefined };
      url = next;
    }
  };
}

async function checkTarget(plugin: string, url: URL, blockPrivate: boolean): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AppError('WEBHOOK_TARGET_BLOCKED', `plugin "${plugin}": ${url.protocol} is not http or https`);
  }
  if (!blockPrivate) return;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  if (addresses.length === 0 || addresses.some(isBlockedAddress)) {
    throw new AppError(
      'WEBHOOK_TARGET_BLOCKED',
      `plugin "${plugin}": ${url.host} is a local, private or reserved address: refused in production`,
    );
  }
}
