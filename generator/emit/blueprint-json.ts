// blueprint.json: the parsed blueprint (the model every emitter reads: imports merged, names resolved,
// defaults applied) as JSON, for the admin server's /blueprint, /entities and /pages, which read it
// when asked. Keys sorted at every level, so the file changes only when the blueprint does; the
// first key, "//", says who wrote it, as package.json's does (the admin server leaves it out).

import * as path from 'node:path';
import { GENERATED_HEADER } from '../header.ts';
import type { Blueprint } from '../model/types.ts';

/** `outDir`: the app folder; a handler's file is shown relative to it, as src/commands.ts imports it. */
export function emitBlueprintJson(bp: Blueprint, outDir: string): string {
  const commands = bp.commands.map((c) =>
    c.handler
      ? { ...c, handler: { ...c.handler, file: path.relative(outDir, c.handler.file).split(path.sep).join('/') } }
      : c,
  );
  return `${JSON.stringify({ '//': GENERATED_HEADER, ...(sortedKeys({ ...bp, commands }) as object) }, null, 2)}\n`;
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]));
}
