// Parse stage: reads the root blueprint and its imports, parses TOML (smol-toml), and gathers
// every named section (keyed or array form, page `queries` folded into `query`) with the file
// and key path it came from, so later stages can point diagnostics at the exact source position.

import * as path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { Diagnostic, SourceLocation } from '../diagnostics.ts';
import { formatPath } from '../diagnostics.ts';
import { isCalendarDate } from '../../runtime-lib/core/values.ts';
import { isInside, type SourceHost } from '../source.ts';
import { buildLocator, type KeyPath, type Locator } from './locate.ts';
import { readTemplateFiles, type TemplateFile } from './templates.ts';

export interface SourceFile {
  absPath: string;
  display: string;
  text: string;
  data: Record<string, unknown>;
  locator: Locator;
}

export interface Origin {
  file: SourceFile;
  /** Where the section's value sits inside `file.data`. */
  keys: KeyPath;
}

export const NAMED_KINDS = ['entity', 'command', 'service', 'plugin', 'skill', 'workflow', 'page'] as const;
export type NamedKind = (typeof NAMED_KINDS)[number];
/** `hash` is Zebric's: its loader overwrites whatever the file says, so bp reads it as nothing too. */
export const SINGLETON_KINDS = ['version', 'hash', 'project', 'auth', 'notifications'] as const;
export type SingletonKind = (typeof SINGLETON_KINDS)[number];

/** Array form of each named section and the key that names its elements. */
export const ARRAY_FORMS: Record<string, { kind: NamedKind; nameKey: string }> = {
  entities: { kind: 'entity', nameKey: 'name' },
  commands: { kind: 'command', nameKey: 'name' },
  services: { kind: 'service', nameKey: 'name' },
  plugins: { kind: 'plugin', nameKey: 'name' },
  skills: { kind: 'skill', nameKey: 'name' },
  workflows: { kind: 'workflow', nameKey: 'name' },
  pages: { kind: 'page', nameKey: 'path' },
};

/** Plural spellings that are also keyed forms when written as a table (`[services.mailer]`, as in Zebric). */
const KEYED_PLURALS: Record<string, NamedKind> = { services: 'service' };

/**
 * Purely presentational top-level sections (Zebric's theme, UX and design settings): bp renders
 * no UI from them, so each is accepted whatever its content, with one IGNORED_KEY warning.
 */
export const PRESENTATIONAL_KEYS = ['ui', 'ux', 'design_adapter', 'design_system'];

export interface Section {
  kind: NamedKind | SingletonKind | 'unknown';
  name: string;
  value: unknown;
  origin: Origin;
}

export interface ParsedBlueprint {
  rootFile: SourceFile;
  rootDir: string;
  files: SourceFile[];
  sections: Section[];
  /** Maps a canonical blueprint path (`entity.Ticket.fields.2`) to a source position. */
  locate(canonical: KeyPath): SourceLocation | undefined;
  /** The position of one character inside the string written at a canonical path (Locator.locateWithin). */
  locateWithin(canonical: KeyPath, offset: number, part: 'key' | 'value'): SourceLocation | undefined;
  /** The template files the blueprint names (`type = "file"`), by the formatPath of their declaration. */
  templateFiles: ReadonlyMap<string, TemplateFile>;
}

export interface ParseResult {
  blueprint?: ParsedBlueprint;
  diagnostics: Diagnostic[];
}

export function parseBlueprint(rootPath: string, host: SourceHost): ParseResult {
  const diagnostics: Diagnostic[] = [];
  const rootAbs = path.resolve(rootPath);
  const rootDir = host.realPath(path.dirname(rootAbs)) ?? path.dirname(rootAbs);
  const files: SourceFile[] = [];
  const sections: Section[] = [];
  /** Canonical paths written under another spelling, beyond what the sections themselves map. */
  const aliases: Array<{ canonical: KeyPath; origin: Origin }> = [];

  const where = (file: SourceFile, keys: KeyPath): SourceLocation | undefined => {
    const pos = file.locator.locate(keys);
    return pos && { file: file.display, ...pos };
  };

  const loadFile = (
    absPath: string,
    stack: string[],
    importedFrom?: { file: SourceFile; keys: KeyPath; written: string },
  ): void => {
    const real = host.realPath(absPath);
    const at = importedFrom && where(importedFrom.file, importedFrom.keys);
    const importPath = importedFrom ? formatPath(importedFrom.keys) : '';
    if (real === undefined || host.readFile(real) === undefined) {
      diagnostics.push({
        code: importedFrom ? 'IMPORT_NOT_FOUND' : 'FILE_NOT_FOUND',
        severity: 'error',
        path: importPath,
        message: importedFrom
          ? `imported file "${importedFrom.written}" does not exist`
          : `cannot read ${host.display(absPath)}: it does not exist or is not a file`,
        hint: importedFrom
          ? `looked for ${host.display(absPath)}; import paths are relative to the importing file`
          : undefined,
        location: at,
      });
      return;
    }
    if (importedFrom && !isInside(rootDir, real)) {
      diagnostics.push({
        code: 'IMPORT_OUTSIDE_ROOT',
        severity: 'error',
        path: importPath,
        message: `import "${importedFrom.written}" leaves the blueprint's root folder ${host.display(rootDir)}`,
        hint: 'keep every fragment in the folder of the root blueprint or below it',
        location: at,
      });
      return;
    }
    if (stack.includes(real)) {
      const cycle = [...stack.slice(stack.indexOf(real)), real].map((p) => host.display(p)).join(' -> ');
      diagnostics.push({
        code: 'IMPORT_CYCLE',
        severity: 'error',
        path: importPath,
        message: `import cycle: ${cycle}`,
        hint: 'a fragment may not import, directly or indirectly, a file that imports it',
        location: at,
      });
      return;
    }
    // A fragment imported twice along different branches is read once; its sections count once.
    if (files.some((f) => f.absPath === real)) return;

    const text = host.readFile(real) as string;
    const display = host.display(real);
    let data: Record<string, unknown>;
    try {
      data = parseToml(text) as Record<string, unknown>;
    } catch (err) {
      if (!(err instanceof TomlError)) throw err;
      diagnostics.push({
        code: 'TOML_SYNTAX',
        severity: 'error',
        path: '',
        message: `TOML syntax error: ${err.message.split('\n')[0].replace(/^Invalid TOML document: /, '')}`,
        location: { file: display, line: err.line, column: err.column },
      });
      return;
    }
    const file: SourceFile = { absPath: real, display, text, data, locator: buildLocator(text) };
    files.push(file);
    diagnostics.push(...impossibleDates(file));
    collectSections(file);
    importsOf(file).forEach(({ written, keys }) => {
      loadFile(path.resolve(path.dirname(real), written), [...stack, real], { file, keys, written });
    });
  };

  /** The file's import paths; malformed entries are reported and skipped so the rest still load. */
  const importsOf = (file: SourceFile): Array<{ written: string; keys: KeyPath }> => {
    const imports = file.data.imports;
    if (imports === undefined) return [];
    if (!Array.isArray(imports)) {
      diagnostics.push({
        code: 'INVALID_IMPORTS',
        severity: 'error',
        path: 'imports',
        message: 'imports must be a list of file paths',
        hint: 'write imports = ["./entities.toml"]',
        location: where(file, ['imports']),
      });
      return [];
    }
    return imports.flatMap((written: unknown, i) => {
      if (typeof written === 'string' && written !== '') return [{ written, keys: ['imports', i] }];
      diagnostics.push({
        code: 'INVALID_IMPORTS',
        severity: 'error',
        path: formatPath(['imports', i]),
        message: `each import must be a file path, got ${describe(written)}`,
        hint: 'write imports = ["./entities.toml"]',
        location: where(file, ['imports', i]),
      });
      return [];
    });
  };

  const collectSections = (file: SourceFile): void => {
    for (const [key, value] of Object.entries(file.data)) {
      if (key === 'imports') continue;
      const plural = isTable(value) && Object.hasOwn(KEYED_PLURALS, key) ? KEYED_PLURALS[key] : undefined;
      const keyedKind = (NAMED_KINDS as readonly string[]).includes(key) ? (key as NamedKind) : plural;
      if (keyedKind) {
        if (!isTable(value)) {
          diagnostics.push(shapeError(file, [key], `${key} must be a table of named ${key} definitions`));
          continue;
        }
        for (const [name, item] of Object.entries(value)) {
          addSection({ kind: keyedKind, name, value: item, origin: { file, keys: [key, name] } });
        }
      } else if (Object.hasOwn(ARRAY_FORMS, key)) {
        const form = ARRAY_FORMS[key];
        if (!Array.isArray(value)) {
          diagnostics.push(shapeError(file, [key], `${key} must be an array of tables ([[${key}]])`));
          continue;
        }
        value.forEach((item, i) => {
          const name = isTable(item) ? item[form.nameKey] : undefined;
          if (typeof name !== 'string' || name === '') {
            diagnostics.push(shapeError(file, [key, i], `each [[${key}]] entry needs a string "${form.nameKey}"`));
            return;
          }
          const { [form.nameKey]: _named, ...rest } = item as Record<string, unknown>;
          addSection({ kind: form.kind, name, value: rest, origin: { file, keys: [key, i] } });
        });
      } else if ((SINGLETON_KINDS as readonly string[]).includes(key)) {
        addSection({ kind: key as SingletonKind, name: '', value, origin: { file, keys: [key] } });
      } else if (PRESENTATIONAL_KEYS.includes(key)) {
        diagnostics.push({
          code: 'IGNORED_KEY',
          severity: 'warning',
          path: key,
          message: `"${key}" is presentational and is ignored`,
          location: where(file, [key]),
        });
      } else {
        sections.push({ kind: 'unknown', name: key, value, origin: { file, keys: [key] } });
      }
    }
  };

  const addSection = (section: Section): void => {
    const clash = sections.find((s) => s.kind === section.kind && s.name === section.name);
    if (clash) {
      const label = section.name ? `${section.kind} "${section.name}"` : `[${section.kind}]`;
      const files =
        clash.origin.file === section.origin.file
          ? `twice in ${section.origin.file.display}`
          : `in ${clash.origin.file.display} and ${section.origin.file.display}`;
      const firstLine = clash.origin.file.locator.locate(clash.origin.keys)?.line ?? 1;
      diagnostics.push({
        code: 'DUPLICATE_DEFINITION',
        severity: 'error',
        path: formatPath(canonicalOf(section)),
        message: `${label} is defined ${files}`,
        hint: `first defined at ${clash.origin.file.display}:${firstLine}`,
        location: where(section.origin.file, section.origin.keys),
      });
      return;
    }
    sections.push(section.kind === 'page' ? withQueryAliases(section) : section);
  };

  /**
   * `queries.<name>` is another spelling of `query.<name>`: merged here so later stages see
   * one form, with each query's canonical path still located where it was written.
   */
  const withQueryAliases = (section: Section): Section => {
    const { value, origin } = section;
    if (!isTable(value) || !isTable(value.queries) || !(value.query === undefined || isTable(value.query)))
      return section;
    const {
      queries,
      query = {},
      ...rest
    } = value as { queries: Record<string, unknown>; query?: Record<string, unknown> };
    const merged: Record<string, unknown> = {};
    for (const [name, q] of Object.entries(queries)) {
      const written: KeyPath = [...origin.keys, 'queries', name];
      if (Object.hasOwn(query, name)) {
        diagnostics.push({
          code: 'DUPLICATE_DEFINITION',
          severity: 'error',
          path: formatPath([...canonicalOf(section), 'queries', name]),
          message: `page "${section.name}" defines query "${name}" twice, as query.${name} and queries.${name}`,
          hint: 'queries.<name> is another spelling of query.<name>; keep one',
          location: where(origin.file, written),
        });
        continue;
      }
      merged[name] = q;
      aliases.push({
        canonical: [...canonicalOf(section), 'query', name],
        origin: { file: origin.file, keys: written },
      });
    }
    return { ...section, value: { ...rest, query: { ...merged, ...query } } };
  };

  const shapeError = (file: SourceFile, keys: KeyPath, message: string): Diagnostic => ({
    code: 'INVALID_SHAPE',
    severity: 'error',
    path: formatPath(keys),
    message,
    location: where(file, keys),
  });

  loadFile(rootAbs, []);
  const rootFile = files[0];
  if (!rootFile) return { diagnostics };

  const mappings = [...sections.map((s) => ({ canonical: canonicalOf(s), origin: s.origin })), ...aliases];
  /** The file and the keys inside it where a canonical path was written. */
  const written = (canonical: KeyPath): { file: SourceFile; keys: KeyPath } => {
    let best: (typeof mappings)[number] | undefined;
    for (const m of mappings) {
      if (m.canonical.length > (best?.canonical.length ?? -1) && m.canonical.every((k, i) => canonical[i] === k))
        best = m;
    }
    if (!best) return { file: rootFile, keys: canonical };
    return { file: best.origin.file, keys: [...best.origin.keys, ...canonical.slice(best.canonical.length)] };
  };
  const locate = (canonical: KeyPath): SourceLocation | undefined => {
    const { file, keys } = written(canonical);
    return where(file, keys);
  };
  const locateWithin = (canonical: KeyPath, offset: number, part: 'key' | 'value'): SourceLocation | undefined => {
    const { file, keys } = written(canonical);
    const pos = file.locator.locateWithin(keys, offset, part);
    return pos && { file: file.display, ...pos };
  };

  const templateFiles = readTemplateFiles(sections, rootDir, host);
  return { blueprint: { rootFile, rootDir, files, sections, locate, locateWithin, templateFiles }, diagnostics };
}

export function canonicalOf(section: Section): KeyPath {
  return section.name === '' ? [section.kind] : [section.kind, section.name];
}

export function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function describe(value: unknown): string {
  if (value === '') return 'an empty string';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return 'a date';
  if (isTable(value)) return 'a table';
  return typeof value === 'number' ? 'a number' : `a ${typeof value}`;
}

/**
 * TOML dates name days that exist (RFC 3339), but smol-toml rolls an impossible one over
 * (2023-02-29 becomes March 1st) instead of refusing it. Each date value is checked here against
 * the text as written.
 */
function impossibleDates(file: SourceFile): Diagnostic[] {
  const out: Diagnostic[] = [];
  const visit = (value: unknown, keys: KeyPath): void => {
    if (value instanceof Date) {
      const written = file.locator.bareValue(keys);
      if (written !== undefined && !dateExists(written)) {
        const pos = file.locator.locateWithin(keys, 0, 'value') ?? file.locator.locate(keys);
        out.push({
          code: 'TOML_SYNTAX',
          severity: 'error',
          path: '',
          message: `TOML syntax error: ${written} is not a date and time that exists`,
          location: pos && { file: file.display, ...pos },
        });
      }
    } else if (Array.isArray(value)) value.forEach((item, i) => visit(item, [...keys, i]));
    else if (isTable(value)) for (const [key, item] of Object.entries(value)) visit(item, [...keys, key]);
  };
  visit(file.data, []);
  return out;
}

/** A TOML date, date-time or time of day whose day, hour, minute and second exist. */
function dateExists(written: string): boolean {
  const date = /^(\d{4}-\d{2}-\d{2})/.exec(written);
  if (date && !isCalendarDate(date[1])) return false;
  const time = /(?:^|[Tt ])(\d{2}):(\d{2})(?::(\d{2}))?/.exec(written);
  // RFC 3339 allows a leap second (60).
  return !time || (Number(time[1]) <= 23 && Number(time[2]) <= 59 && Number(time[3] ?? 0) <= 60);
}
