// Template files of the blueprint (a page's `template`, its `layoutSlots`, `[auth.pages]`), read
// here with the blueprint itself, so the stages after the parse read no file: the model takes each
// template's text from here, the validation reports the ones that are missing, outside the
// blueprint's folder or broken. A template file's path is relative to the TOML file that declares
// it; the generated app carries the text and never reads blueprint files.

import * as path from 'node:path';
import { formatPath } from '../diagnostics.ts';
import { isInside, type SourceHost } from '../source.ts';
import type { KeyPath } from './locate.ts';

export interface TemplateFile {
  absPath: string;
  /** The path as diagnostics show it. */
  display: string;
  /** Resolves (symlinks followed) outside the root blueprint's folder: not read. */
  outside: boolean;
  /** Undefined when the file does not exist or is not a regular file (or is outside). */
  text?: string;
}

/** Where templates are declared, as the parse stage gathers sections: kind, name and value. */
interface TemplateSection {
  kind: string;
  name: string;
  value: unknown;
  origin: { file: { absPath: string } };
}

/** Each template declaration: its canonical blueprint path, the table and its default `type`. */
export function templateDeclarations(
  section: Pick<TemplateSection, 'kind' | 'name' | 'value'>,
): Array<{ keys: KeyPath; raw: Record<string, unknown>; defaultType: 'file' | 'inline' }> {
  const out: Array<{ keys: KeyPath; raw: Record<string, unknown>; defaultType: 'file' | 'inline' }> = [];
  const value = asTable(section.value);
  if (!value) return out;
  if (section.kind === 'page') {
    const at: KeyPath = ['page', section.name];
    const template = asTable(value.template);
    if (template) out.push({ keys: [...at, 'template'], raw: template, defaultType: 'file' });
    // Slot templates are inline unless they say otherwise (Zebric).
    for (const [slot, raw] of Object.entries(asTable(value.layoutSlots) ?? {})) {
      const t = asTable(raw);
      if (t) out.push({ keys: [...at, 'layoutSlots', slot], raw: t, defaultType: 'inline' });
    }
  } else if (section.kind === 'auth') {
    for (const [name, raw] of Object.entries(asTable(value.pages) ?? {})) {
      const t = asTable(raw);
      if (t) out.push({ keys: ['auth', 'pages', name], raw: t, defaultType: 'file' });
    }
  }
  return out;
}

/** How a template declaration is known: its canonical blueprint path, as diagnostics write it. */
export const templateKey = (keys: KeyPath): string => formatPath(keys);

/** The template files the sections name, by the templateKey of their declaration. */
export function readTemplateFiles(
  sections: readonly TemplateSection[],
  rootDir: string,
  host: SourceHost,
): Map<string, TemplateFile> {
  const files = new Map<string, TemplateFile>();
  for (const section of sections) {
    for (const { keys, raw, defaultType } of templateDeclarations(section)) {
      const type = raw.type ?? defaultType;
      if (type !== 'file' || typeof raw.source !== 'string') continue;
      const absPath = path.resolve(path.dirname(section.origin.file.absPath), raw.source);
      const real = host.realPath(absPath);
      const outside = !isInside(rootDir, real ?? absPath);
      const text = outside || real === undefined ? undefined : host.readFile(real);
      files.set(templateKey(keys), { absPath, display: host.display(real ?? absPath), outside, text });
    }
  }
  return files;
}

function asTable(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
    ? (value as Record<string, unknown>)
    : undefined;
}
