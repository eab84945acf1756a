// HTML written as tagged templates that escape every value they interpolate: a page cannot forget
// to escape a record's text, because only markup made by `html` (or `trusted`) passes through
// as markup. Arrays are joined; undefined, null and false render as nothing.

import { escapeHtml } from './document.ts';

/** Markup that is already safe to put in a page. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Markup made elsewhere and known to be safe (a rendered template, a document part). */
export function trusted(text: string): Html {
  return new Html(text);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}
