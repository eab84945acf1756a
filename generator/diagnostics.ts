// One diagnostic type for every stage of the compiler. Each carries a stable code (listed in
// docs/diagnostics.md, enforced by test/validate.test.ts), the blueprint path it is about, and,
// where known, the source position.

export type Severity = 'error' | 'warning';

export interface SourceLocation {
  /** File path as shown to the user (relative to the working directory when possible). */
  file: string;
  line: number;
  column: number;
}

export interface Diagnostic {
  code: string;
  severity: Severity;
  /** Blueprint path such as `entity.Ticket.fields.2.type`. Empty for file-level problems. */
  path: string;
  message: string;
  hint?: string;
  location?: SourceLocation;
}

/** Joins path segments the way users write them: bare keys dotted, other keys quoted like TOML. */
export function formatPath(keys: readonly (string | number)[]): string {
  return keys
    .map((k) => (typeof k === 'number' || /^[A-Za-z0-9_-]+$/.test(k) ? String(k) : JSON.stringify(k)))
    .join('.');
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}

/** `file:line:col path: message [severity CODE]` and an indented hint (the blueprint contract's format). */
export function renderDiagnostic(d: Diagnostic): string {
  const where = d.location ? `${d.location.file}:${d.location.line}:${d.location.column} ` : '';
  const path = d.path ? `${d.path}: ` : '';
  let out = `${where}${path}${d.message} [${d.severity} ${d.code}]`;
  if (d.hint) out += `\n  hint: ${d.hint}`;
  return out;
}
