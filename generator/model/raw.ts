// Readers for blueprint values as TOML parsed them, shared by the declaration rules and the model
// build. A value of another shape has its shape error already; these readers read it as absent.

import type { ParsedBlueprint, Section } from '../parse/load.ts';
import { isTable } from '../parse/load.ts';

export type Raw = Record<string, unknown>;

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
/**
 * A string value, or '' for anything else. Not String(v): TOML tables have no prototype, so
 * String(table) throws.
 */
export const text = (v: unknown): string => str(v) ?? '';
export const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const strList = (v: unknown): string[] => list(v).filter((x): x is string => typeof x === 'string');
export const table = (v: unknown): Raw => (isTable(v) ? v : {});
export const strTable = (v: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries(table(v)).filter(([, x]) => typeof x === 'string')) as Record<string, string>;

/** The value at `keys` inside `value`, or undefined. */
export function valueAt(value: unknown, keys: readonly (string | number)[]): unknown {
  let current = value;
  for (const key of keys) {
    current =
      (isTable(current) || Array.isArray(current)) && Object.hasOwn(current, key)
        ? (current as Record<string | number, unknown>)[key]
        : undefined;
  }
  return current;
}

/** Sections of one named kind whose value is a table, in name order (code points: locale-free). */
export function namedSections(parsed: ParsedBlueprint, kind: string): Array<Section & { value: Raw }> {
  return parsed.sections
    .filter((s): s is Section & { value: Raw } => s.kind === kind && isTable(s.value))
    .sort((a, b) => compare(a.name, b.name));
}

/** The value of a singleton section ([auth], [project]...), or an empty table. */
export function singleSection(parsed: ParsedBlueprint, kind: string): Raw {
  return table(parsed.sections.find((s) => s.kind === kind)?.value);
}

/** Code-point order, independent of the machine's locale: output must not depend on where bp runs. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
