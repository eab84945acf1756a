// The one context object passed down through validation and model building: where to report,
// how to locate a blueprint path in the source, and how to read files.

import type { Diagnostic, Severity, SourceLocation } from './diagnostics.ts';
import { formatPath } from './diagnostics.ts';
import type { ParsedBlueprint } from './parse/load.ts';
import type { KeyPath } from './parse/locate.ts';
import type { SourceHost } from './source.ts';

export interface ReportOptions {
  hint?: string;
  severity?: Severity;
  /**
   * Points at one character of the string written at the path (UTF-16 offset into its decoded
   * text) rather than at the key: where an expression fails, or the name that does not resolve.
   */
  within?: { offset: number; part: 'key' | 'value' };
  /** A position in another file than the blueprint's: a line of a template file. */
  location?: SourceLocation;
}

export interface CompileContext {
  parsed: ParsedBlueprint;
  host: SourceHost;
  diagnostics: Diagnostic[];
  report(code: string, keys: KeyPath, message: string, options?: ReportOptions): void;
  /**
   * Whether an error was already reported at `keys` or inside it: later checks leave such a
   * declaration alone, so one mistake gives one diagnostic.
   */
  failed(keys: KeyPath): boolean;
  /**
   * Where model items without a `path` of their own were written: workflow steps, permission
   * rules and API keys (malformed ones are left out of the model, so a model index is not the
   * source index),
   * and a field's own `commands` list (as opposed to one it inherits from `protection`).
   */
  declaredAt: WeakMap<object, KeyPath>;
}

/** Codes of the parse and shape stages that mean "this value has the wrong shape". */
const SHAPE_CODES = new Set(['INVALID_SHAPE', 'INVALID_VALUE', 'MISSING_KEY']);

const isAtOrInside = (path: string, outer: string) => path === outer || path.startsWith(`${outer}.`);

export function createContext(parsed: ParsedBlueprint, host: SourceHost, diagnostics: Diagnostic[]): CompileContext {
  // Once a value has the wrong shape, every later check of it or of anything inside it would
  // only restate that problem with a misleading value (entity "undefined" does not exist).
  const malformed = diagnostics.filter((d) => d.severity === 'error' && SHAPE_CODES.has(d.code)).map((d) => d.path);
  const isInsideMalformed = (path: string) => malformed.some((m) => isAtOrInside(path, m));
  return {
    parsed,
    host,
    diagnostics,
    declaredAt: new WeakMap(),
    report(code, keys, message, options = {}) {
      const path = formatPath(keys);
      if (isInsideMalformed(path)) return;
      const within = options.within && parsed.locateWithin(keys, options.within.offset, options.within.part);
      diagnostics.push({
        code,
        severity: options.severity ?? 'error',
        path,
        message,
        hint: options.hint,
        location: options.location ?? within ?? parsed.locate(keys),
      });
    },
    failed(keys) {
      const path = formatPath(keys);
      return diagnostics.some((d) => d.severity === 'error' && isAtOrInside(d.path, path));
    },
  };
}
