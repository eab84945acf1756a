// Which names a handler module exports, read without running it: esbuild strips the TypeScript,
// es-module-lexer lists the exports. Keeps the TypeScript compiler off the generation path.

import { transformSync } from 'esbuild';
import { initSync, parse } from 'es-module-lexer';

initSync();

/** Export names of a JS/TS module source (`default` included), or an error message. */
export function moduleExports(
  source: string,
  fileName: string,
): { ok: true; names: string[] } | { ok: false; message: string } {
  try {
    const loader = /\.[cm]?tsx?$/.test(fileName) ? (fileName.endsWith('x') ? 'tsx' : 'ts') : 'js';
    const { code } = transformSync(source, { loader, format: 'esm', sourcefile: fileName });
    const [, exports] = parse(code);
    return { ok: true, names: exports.map((e) => e.n) };
  } catch (err) {
    const first = (err as { errors?: Array<{ text: string; location?: { line: number } }> }).errors?.[0];
    return {
      ok: false,
      message: first ? `${first.text}${first.location ? ` (line ${first.location.line})` : ''}` : String(err),
    };
  }
}
