// The browser tests' launcher (support/chromium.ts: launchChromium checks chromiumPath first) fails
// with one line that says how to install Chromium when it is missing, instead of a launch error
// from deep inside playwright.

import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';
import { chromiumPath } from './support/chromium.ts';

describe('launching Chromium for the browser tests', () => {
  it('refuses a missing binary with one line naming it, the Debian package and CHROMIUM_PATH', () => {
    const missing = path.join(os.tmpdir(), 'bp-no-such-chromium', 'chromium');
    expect(() => chromiumPath({ CHROMIUM_PATH: missing })).to.throw(
      `Chromium not found at ${missing}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH`,
    );
  });
});
