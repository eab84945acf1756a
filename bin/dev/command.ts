// `bp dev`'s command line: options checked, the dev loop run until SIGINT or SIGTERM.

import * as path from 'node:path';
import type { Printer } from '../generate.ts';
import { DevLoop } from './dev-loop.ts';
import { LOOPBACK_BIND_HOSTS } from './loopback.ts';

export interface DevCommandOptions {
  out?: string;
  port?: string;
  adminPort: string;
  adminHost: string;
  hotReload: boolean;
  acceptDataLoss?: boolean;
}

/** A usage error: the message, exit code 2. */
export class DevUsageError extends Error {}

function port(name: string, raw: string): number {
  const value = Number(raw);
  if (!/^\d{1,5}$/.test(raw) || value > 65535)
    throw new DevUsageError(`${name} must be a port from 0 to 65535 (got "${raw}")`);
  return value;
}

/** Runs bp dev; resolves to the exit code once stopped by a signal (or at once when it cannot start). */
export async function runDevCommand(blueprint: string, opts: DevCommandOptions, print: Printer): Promise<number> {
  if (!LOOPBACK_BIND_HOSTS.includes(opts.adminHost)) {
    throw new DevUsageError(
      `--admin-host must be a loopback address (${LOOPBACK_BIND_HOSTS.join(', ')}): the admin server has no ` +
        `authentication (got "${opts.adminHost}")`,
    );
  }
  const loop = new DevLoop(
    {
      blueprint,
      out: opts.out ?? path.join('out', path.basename(blueprint, path.extname(blueprint))),
      port: port('--port', opts.port ?? process.env.PORT ?? '3000'),
      adminPort: port('--admin-port', opts.adminPort),
      adminHost: opts.adminHost,
      hotReload: opts.hotReload,
      acceptDataLoss: opts.acceptDataLoss === true,
    },
    print,
  );
  // Registered before anything starts, so Ctrl-C during the first generation still stops cleanly.
  const signalled = new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  const started = await Promise.race([loop.start(), signalled.then(() => true)]);
  if (started) await signalled;
  print.out('bp dev: stopping\n');
  await loop.stop();
  return started ? 0 : 1;
}
