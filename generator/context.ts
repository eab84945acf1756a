// The one context object passed down through validation and model building: where to report,
// how to locate a blueprint path in the source, and how to read files.

import type { Diagnostic, Severity } from './diagnostics.ts';
import { formatPath } from './diagnostics.ts';
import type { ParsedBlueprint } from './parse/load.ts';
import type { KeyPath } from './parse/locate.ts';
import type { SourceHost } from './source.ts';

export interface CompileContext {
  parsed: ParsedBlueprint;
  host: SourceHost;
  diagnostics: Diagnostic[];
  report(code: string, keys: KeyPath, message: string, options?: { hint?: string; severity?: Severity }): void;
}

export function createContext(parsed: ParsedBlueprint, host: SourceHost, diagnostics: Diagnostic[]): CompileContext {
  return {
    parsed,
    host,
    diagnostics,
    report(code, keys, message, options = {}) {
      diagnostics.push({
        code,
        severity: options.severity ?? 'error',
        path: formatPath(keys),
        message,
        hint: options.hint,
        location: parsed.locate(keys),
      });
    },
  };
}
