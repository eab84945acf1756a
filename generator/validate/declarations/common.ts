// Checks several kinds of declaration share: names and MIME types.

import type { CompileContext } from '../../context.ts';
import { list } from '../../model/raw.ts';
import { IDENTIFIER } from '../../model/names.ts';
import type { KeyPath } from '../../parse/locate.ts';

/** Names that would reach prototypes or clash with generated code if used as identifiers. */
const RESERVED_NAMES = new Set(['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty']);
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*)$/;

/** Reports a name that is reserved or not an identifier; true when the name is fine. */
export function checkIdentifier(ctx: CompileContext, at: KeyPath, name: string, what: string): boolean {
  if (RESERVED_NAMES.has(name)) {
    ctx.report('RESERVED_NAME', at, `"${name}" cannot be used as a ${what} name`);
    return false;
  }
  if (!IDENTIFIER.test(name)) {
    ctx.report(
      'INVALID_NAME',
      at,
      `${what} name "${name}" must start with a letter and use only letters, digits and _`,
    );
    return false;
  }
  return true;
}

export const isIdentifier = (name: string): boolean => !RESERVED_NAMES.has(name) && IDENTIFIER.test(name);

export function checkMimeTypes(ctx: CompileContext, at: KeyPath, accept: unknown): void {
  list(accept).forEach((mime, i) => {
    if (typeof mime !== 'string' || MIME_TYPE.test(mime)) return;
    ctx.report('INVALID_MIME_TYPE', [...at, i], `accept entry "${mime}" is not a MIME type`, {
      hint: mime.startsWith('.')
        ? 'accept lists MIME types such as "application/pdf", not file extensions'
        : 'write type/subtype, e.g. "image/png"',
    });
  });
}
