// Parse stage: reads the root blueprint and its imports, parses TOML (smol-toml), and gathers
// every named section (keyed or array form) with the file and key path it came from, so later
// stages can point diagnostics at the exact source position.

import * as path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { Diagnostic, SourceLocation } from '../diagnostics.ts';
import { formatPath } from '../diagnostics.ts';
import { isInside, type SourceHost } from '../source.ts';
import { buildLocator, type KeyPath, type Locator } from './locate.ts';

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

export const NAMED_KINDS = ['entity', 'command', 'skill', 'workflow', 'page'] as const;
export type NamedKind = (typeof NAMED_KINDS)[number];
export const SINGLETON_KINDS = ['version', 'project', 'auth', 'notifications'] as const;
export type SingletonKind = (typeof SINGLETON_KINDS)[number];

/** Array form of each named section and the key that names its elements. */
const ARRAY_FORMS: Record<string, { kind: NamedKind; nameKey: string }> = {
  entities: { kind: 'entity', nameKey: 'name' },
  commands: { kind: 'command', nameKey: 'name' },
  skills: { kind: 'skill', nameKey: 'name' },
  workflows: { kind: 'workflow', nameKey: 'name' },
  pages: { kind: 'page', nameKey: 'path' },
};

/** Top-level keys of other UI systems: accepted with a warning so foreign blueprints still build. */
export const FOREIGN_KEYS = ['ui', 'ux', 'design_system'];

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

  const where = (file: SourceFile, keys: KeyPath): SourceLocation | undefined => {
    const pos = file.locator.locate(keys);
    return pos && { file: file.display, ...pos };
  };

  const loadFile = (absPath: string, stack: string[], importedFrom?: { file: SourceFile; keys: KeyPath }): void => {
    const real = host.realPath(absPath);
    const at = importedFrom && where(importedFrom.file, importedFrom.keys);
    const importPath = importedFrom ? formatPath(importedFrom.keys) : '';
    if (real === undefined || host.readFile(real) === undefined) {
      diagnostics.push({
        code: importedFrom ? 'IMPORT_NOT_FOUND' : 'FILE_NOT_FOUND',
        severity: 'error',
        path: importPath,
        message: `cannot read ${host.display(absPath)}`,
        hint: importedFrom ? 'import paths are relative to the importing file' : undefined,
        location: at,
      });
      return;
    }
    if (importedFrom && !isInside(rootDir, real)) {
      diagnostics.push({
        code: 'IMPORT_OUTSIDE_ROOT',
        severity: 'error',
        path: importPath,
        message: `import ${host.display(absPath)} leaves the blueprint's root folder ${host.display(rootDir)}`,
        hint: 'keep every fragment under the folder of the root blueprint',
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
    collectSections(file);

    const imports = data.imports;
    if (imports === undefined) return;
    if (!Array.isArray(imports) || imports.some((i) => typeof i !== 'string')) {
      diagnostics.push({
        code: 'INVALID_IMPORTS',
        severity: 'error',
        path: 'imports',
        message: 'imports must be a list of relative file paths',
        location: where(file, ['imports']),
      });
      return;
    }
    imports.forEach((rel: string, i) => {
      loadFile(path.resolve(path.dirname(real), rel), [...stack, real], { file, keys: ['imports', i] });
    });
  };

  const collectSections = (file: SourceFile): void => {
    for (const [key, value] of Object.entries(file.data)) {
      if (key === 'imports') continue;
      if ((NAMED_KINDS as readonly string[]).includes(key)) {
        if (!isTable(value)) {
          diagnostics.push(shapeError(file, [key], `${key} must be a table of named ${key} definitions`));
          continue;
        }
        for (const [name, item] of Object.entries(value)) {
          addSection({ kind: key as NamedKind, name, value: item, origin: { file, keys: [key, name] } });
        }
      } else if (key in ARRAY_FORMS) {
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
      } else if (FOREIGN_KEYS.includes(key)) {
        diagnostics.push({
          code: 'IGNORED_KEY',
          severity: 'warning',
          path: key,
          message: `"${key}" belongs to another UI system and is ignored`,
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
      const files = clash.origin.file === section.origin.file
        ? `twice in ${section.origin.file.display}`
        : `in ${clash.origin.file.display} and ${section.origin.file.display}`;
      diagnostics.push({
        code: 'DUPLICATE_DEFINITION',
        severity: 'error',
        path: canonicalOf(section).join('.'),
        message: `${label} is defined ${files}`,
        hint: `first defined at ${clash.origin.file.display}:${clash.origin.file.locator.locate(clash.origin.keys)?.line ?? 1}`,
        location: where(section.origin.file, section.origin.keys),
      });
      return;
    }
    sections.push(section);
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

  const locate = (canonical: KeyPath): SourceLocation | undefined => {
    let best: Section | undefined;
    let bestLen = -1;
    for (const s of sections) {
      const prefix = canonicalOf(s);
      if (prefix.length > bestLen && prefix.every((k, i) => canonical[i] === k)) {
        best = s;
        bestLen = prefix.length;
      }
    }
    if (!best) return where(rootFile, canonical);
    return where(best.origin.file, [...best.origin.keys, ...canonical.slice(bestLen)]);
  };

  return { blueprint: { rootFile, rootDir, files, sections, locate }, diagnostics };
}

export function canonicalOf(section: Section): KeyPath {
  return section.name === '' ? [section.kind] : [section.kind, section.name];
}

export function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}
