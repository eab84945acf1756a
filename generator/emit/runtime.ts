// src/runtime/: the runtime library, copied into the app so it stands alone. Only the modules the
// app imports are copied: the import closure of the app's own files through bp's runtime-lib/
// (its folders kept), each with the generated header on top. Modules loaded by `import()` count
// too (the PostgreSQL driver, chosen by DATABASE_URL when the app starts; the MCP server, loaded
// by the first request), so an import the generator cannot read (a computed specifier) stops the
// generation rather than leaving a module out.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initSync, parse } from 'es-module-lexer';
import { GENERATED_HEADER } from '../header.ts';

initSync();

export const RUNTIME_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../runtime-lib');

/** Where the runtime lives in the app. */
const APP_RUNTIME = 'src/runtime';

/**
 * Runtime modules every app carries whatever its own files import: the handler contract, which a
 * team's command handlers import as `bp/runtime` (tsconfig.json and scripts/build.js map it there).
 */
export const RUNTIME_ENTRY_POINTS = ['commands/handler.ts'];

/**
 * The runtime modules the app's TypeScript files import, directly or through each other, copied
 * under src/runtime/. `appFiles` maps the paths of the files bp writes (`src/app.ts`) to their
 * text; an import in them that cannot be followed is bp's error, and throws. `teamFiles` are the
 * team's own (src/extend.ts as it is on disk): what they import is copied too, but a module they
 * name that does not exist, or an import that cannot be read, is for the type check to report.
 * `runtimeDir` is for tests; generation reads bp's own runtime-lib/.
 */
export function emitRuntime(
  appFiles: ReadonlyMap<string, string>,
  teamFiles: ReadonlyMap<string, string> = new Map(),
  runtimeDir = RUNTIME_DIR,
): Map<string, string> {
  const needed = new Set<string>();
  const pending: string[] = [];
  const want = (name: string, from: string) => {
    if (needed.has(name)) return;
    if (!fs.existsSync(path.join(runtimeDir, name)))
      throw new Error(`${from} imports src/runtime/${name}, which bp's runtime does not have`);
    needed.add(name);
    pending.push(name);
  };
  for (const name of RUNTIME_ENTRY_POINTS) want(name, 'bp/runtime');
  for (const [file, source] of appFiles) {
    if (!file.endsWith('.ts') || file.startsWith(`${APP_RUNTIME}/`)) continue;
    for (const target of runtimeImports(file, source)) want(target, file);
  }
  for (const [file, source] of teamFiles) {
    let targets: string[] = [];
    try {
      targets = runtimeImports(file, source);
    } catch {
      // Unreadable: the type check and the build say what is wrong with the team's file.
    }
    for (const target of targets) if (fs.existsSync(path.join(runtimeDir, target))) want(target, file);
  }
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    const file = `${APP_RUNTIME}/${name}`;
    for (const target of runtimeImports(file, fs.readFileSync(path.join(runtimeDir, name), 'utf8'))) want(target, file);
  }
  const files = new Map<string, string>();
  for (const name of [...needed].sort()) {
    const source = fs.readFileSync(path.join(runtimeDir, name), 'utf8');
    files.set(`${APP_RUNTIME}/${name}`, `// ${GENERATED_HEADER} (copied from bp's runtime-lib)\n${source}`);
  }
  return files;
}

/**
 * The runtime modules (paths inside src/runtime/) that the app file `file` imports, statically,
 * by `export ... from` or by `import()`. Type-only imports count: the app type-checks with them.
 */
function runtimeImports(file: string, source: string): string[] {
  let imports;
  try {
    [imports] = parse(source, file);
  } catch (err) {
    throw new Error(`cannot read the imports of ${file}: ${(err as Error).message}`, { cause: err });
  }
  const targets: string[] = [];
  for (const entry of imports) {
    if (entry.d === -2) continue; // import.meta
    if (entry.n === undefined) {
      // A dynamic import of a computed specifier: the module it loads cannot be known here.
      const text = source.slice(entry.ss, entry.se);
      throw new Error(`${file}: cannot tell which module ${text} loads; import() needs a string literal`);
    }
    const specifier = entry.n;
    if (specifier === 'bp/runtime') continue; // an entry point, always copied
    if (!specifier.startsWith('.')) continue; // a package
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
    if (target.startsWith(`${APP_RUNTIME}/`)) targets.push(target.slice(APP_RUNTIME.length + 1));
  }
  return targets;
}
