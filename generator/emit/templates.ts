// Whole-file Handlebars templates, compiled once in strict mode (a missing value is an error,
// not an empty string). Generated code is not HTML: escaping is off for every template but HTML.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import Handlebars from 'handlebars';
import { GENERATED_HEADER } from '../header.ts';

const TEMPLATE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../templates');
const hbs = Handlebars.create();
hbs.registerHelper('json', (value: unknown) => JSON.stringify(value ?? null));
const cache = new Map<string, Handlebars.TemplateDelegate>();

export function render(template: string, data: Record<string, unknown>): string {
  let compiled = cache.get(template);
  if (!compiled) {
    const source = fs.readFileSync(path.join(TEMPLATE_DIR, template), 'utf8');
    compiled = hbs.compile(source, { strict: true, noEscape: !template.endsWith('.html.hbs') });
    cache.set(template, compiled);
  }
  return compiled({ header: GENERATED_HEADER, ...data });
}
