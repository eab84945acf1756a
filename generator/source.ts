// The compiler reads files only through this port, so every stage stays a function of its
// inputs: the CLI passes the real file system, tests may pass a map of files.

import * as fs from 'node:fs';
import * as path from 'node:path';

export interface SourceHost {
  /** Contents of a file, or undefined when it does not exist or is not a regular file. */
  readFile(absPath: string): string | undefined;
  /** Resolves symlinks so "stays under the root folder" cannot be escaped through a link. */
  realPath(absPath: string): string | undefined;
  /** Path shown to users in diagnostics. */
  display(absPath: string): string;
}

export function nodeSourceHost(cwd: string = process.cwd()): SourceHost {
  return {
    readFile(absPath) {
      try {
        if (!fs.statSync(absPath).isFile()) return undefined;
        return fs.readFileSync(absPath, 'utf8');
      } catch {
        return undefined;
      }
    },
    realPath(absPath) {
      try {
        return fs.realpathSync(absPath);
      } catch {
        return undefined;
      }
    },
    display(absPath) {
      const rel = path.relative(cwd, absPath);
      return rel && !rel.startsWith('..') ? rel : absPath;
    },
  };
}

/** True when `child` is `dir` or inside it (both absolute, normalized). */
export function isInside(dir: string, child: string): boolean {
  const rel = path.relative(dir, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
