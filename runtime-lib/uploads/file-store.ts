// Where uploaded files live, chosen when the app starts as the database is: a folder by default
// (`./data/uploads/` under the app's working directory, checked writable at start), or an
// S3-compatible bucket when UPLOADS_URL is `s3://bucket/prefix` (s3-store.ts), which several
// instances of the app share. Files are written once under a new name and never changed.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { AppError } from '../core/errors.ts';
import { s3Store } from './s3-store.ts';

export interface FileStore {
  /** For the start-up log: the folder or the bucket. */
  readonly description: string;
  /** A folder for the files being received, on the same file system as the store when it is a folder. */
  readonly incoming: string;
  /** Stores the finished file at `source` (in `incoming`, then gone) under `name`. */
  put(name: string, source: string, size: number, contentType: string): Promise<void>;
  /** The stored file, or undefined when there is none by that name. */
  open(name: string): Promise<{ body: Readable; size: number } | undefined>;
  /** Removes the file; one already gone is no error. */
  remove(name: string): Promise<void>;
}

/** The store UPLOADS_URL names, or the folder `./data/uploads/` under `cwd`; throws when unusable. */
export function openFileStore(env: NodeJS.ProcessEnv, cwd = process.cwd()): FileStore {
  const url = env.UPLOADS_URL;
  if (url === undefined || url === '') return diskStore(path.resolve(cwd, 'data', 'uploads'));
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`UPLOADS_URL must be s3://bucket/prefix (got "${url}")`);
  }
  if (parsed.protocol !== 's3:' || parsed.hostname === '' || parsed.search !== '' || parsed.hash !== '')
    throw new Error(`UPLOADS_URL must be s3://bucket/prefix (got "${url}")`);
  const prefix = decodeURIComponent(parsed.pathname).replace(/^\/+/, '');
  // Files being received, before they go to the bucket: random names, so instances may share it.
  const incoming = path.join(os.tmpdir(), 'bp-uploads');
  fs.mkdirSync(incoming, { recursive: true });
  return s3Store(
    { bucket: parsed.hostname, prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/` },
    env,
    incoming,
  );
}

/** The folder store: created if missing, and proven writable now rather than at the first upload. */
function diskStore(dir: string): FileStore {
  const incoming = path.join(dir, '.incoming');
  try {
    fs.mkdirSync(incoming, { recursive: true });
    const probe = path.join(incoming, `.write-check-${process.pid}`);
    fs.writeFileSync(probe, '');
    fs.unlinkSync(probe);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `uploads: the folder ${dir} must exist and be writable (${why}); ` +
        'make it so, or set UPLOADS_URL=s3://bucket/prefix',
      { cause: err },
    );
  }
  const at = (name: string) => path.join(dir, name);
  return {
    description: dir,
    incoming,
    async put(name, source) {
      // The same file system: a rename, so a file is never seen half-written under its name.
      await fs.promises.rename(source, at(name));
    },
    async open(name) {
      let handle: fs.promises.FileHandle;
      try {
        handle = await fs.promises.open(at(name), 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
      const { size } = await handle.stat();
      return { body: handle.createReadStream(), size };
    },
    async remove(name) {
      await fs.promises.rm(at(name), { force: true });
    },
  };
}

/**
 * The failure of the file store (a full disk, an unreachable bucket) as a client sees it: 503,
 * retryable; `cause` is for the logs.
 */
export function filesUnavailable(cause: unknown): AppError {
  return new AppError(
    'STORAGE_UNAVAILABLE',
    'the file store cannot store or read files right now; nothing was stored',
    {
      retryAfter: 5,
      cause,
    },
  );
}
