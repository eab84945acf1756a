// Launching headless Chromium for the browser tests. They never skip: without Chromium they fail
// at once, with the one line that says how to get it.

import * as fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's package; CHROMIUM_PATH names another binary. */
export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/** The Chromium binary the browser tests run, or an error saying how to install it. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  const executable = env.CHROMIUM_PATH || DEFAULT_CHROMIUM;
  if (!fs.existsSync(executable)) {
    throw new Error(
      `Chromium not found at ${executable}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
  return executable;
}

/** Headless Chromium, sandbox off (tests run as root in containers), no background traffic. */
export async function launchChromium(env: NodeJS.ProcessEnv = process.env): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(env),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
