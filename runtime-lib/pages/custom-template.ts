// The template engines of a blueprint's own templates: Handlebars and Liquid (liquidjs), each
// template compiled once when the app starts (the generated code calls compileTemplate at module
// level) and rendered with the variables of template-context.ts. Safe by default: every value a
// template outputs is HTML-escaped unless the app made it (SafeHtml, such as csrfField) or the
// template says otherwise (`{{{x}}}`, `| raw`); nothing is read from the file system (no partials,
// no include, render or layout); only a value's own properties are reached (Handlebars 4.6+ denies
// prototype access by default; Liquid is told `ownPropertyOnly`); no template becomes JavaScript
// source that is evaluated beyond what Handlebars itself compiles. The generator compiles every
// template with this same module, so a template that would fail here stops the generation instead.

import Handlebars from 'handlebars';
import { filters, Liquid, Tag, type TagToken, type Template as LiquidTemplate, type TopLevelToken } from 'liquidjs';
import { type CompiledTemplate, SafeHtml, TemplateRenderError } from './template-context.ts';

export interface TemplateSpec {
  engine: 'handlebars' | 'liquid';
  /** The template itself. */
  text: string;
  /** The template's file as the blueprint names it, or the blueprint key of an inline one: for errors. */
  source: string;
}

/** A template that does not compile: the engine's reason and, where the engine tells, its position (1-based). */
export class TemplateSyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(reason);
    this.name = 'TemplateSyntaxError';
  }
}

/** Compiles a template, or throws a TemplateSyntaxError. */
export function compileTemplate(spec: TemplateSpec): CompiledTemplate {
  const render = spec.engine === 'handlebars' ? compileHandlebars(spec.text) : compileLiquid(spec.text);
  return {
    source: spec.source,
    render(data) {
      try {
        return render(data);
      } catch (err) {
        throw new TemplateRenderError(spec.source, err);
      }
    },
  };
}

type Render = (data: Readonly<Record<string, unknown>>) => string;

// --- Handlebars ---

/** Its own environment: the helpers below and no partials, whatever else the process registers. */
const handlebars = Handlebars.create();

function compileHandlebars(text: string): Render {
  let ast: hbs.AST.Program;
  try {
    ast = handlebars.parse(text);
  } catch (err) {
    throw handlebarsSyntaxError(err, text);
  }
  const refused = refusedStatement(ast);
  if (refused) throw refused;
  // Handlebars compiles on the first render; precompiling now (its output is only looked at for
  // errors) makes a template that cannot compile fail here, when the app starts or is generated.
  try {
    handlebars.precompile(ast);
  } catch (err) {
    throw handlebarsSyntaxError(err, text);
  }
  const template = handlebars.compile(ast);
  return (data) => template(data);
}

/** Partials (read from files elsewhere) and decorators (deprecated, and code) are refused. */
function refusedStatement(node: hbs.AST.Node): TemplateSyntaxError | undefined {
  const n = node as hbs.AST.Node & { body?: hbs.AST.Node[]; program?: hbs.AST.Node; inverse?: hbs.AST.Node };
  if (/^(Partial|PartialBlock|Decorator|DecoratorBlock)Statement$|^DecoratorBlock$/.test(n.type)) {
    const what = n.type.startsWith('Partial') ? 'a partial ({{> name}})' : 'a decorator ({{* name}})';
    return new TemplateSyntaxError(
      `${what} is not available: a template is one file and stands alone`,
      n.loc?.start.line,
      n.loc ? n.loc.start.column + 1 : undefined,
    );
  }
  for (const child of [...(n.body ?? []), n.program, n.inverse]) {
    const found = child && refusedStatement(child);
    if (found) return found;
  }
  return undefined;
}

/**
 * Handlebars' errors: a block mismatch carries its position (0-based column); a parse error says
 * only "Parse error on line N:" with an excerpt that ends where the error is, so the column is
 * found by matching that excerpt against line N.
 */
function handlebarsSyntaxError(err: unknown, text: string): TemplateSyntaxError {
  if (!(err instanceof Error)) return new TemplateSyntaxError(String(err));
  const e = err as Error & { lineNumber?: number; column?: number };
  if (typeof e.lineNumber === 'number') {
    const reason = e.message.replace(/ - \d+:\d+$/, '');
    return new TemplateSyntaxError(reason, e.lineNumber, typeof e.column === 'number' ? e.column + 1 : undefined);
  }
  const parse = /^Parse error on line (\d+):\n(.*)\n(-*)\^\n(.*)$/s.exec(e.message);
  if (!parse) return new TemplateSyntaxError(e.message.split('\n')[0]);
  const line = Number(parse[1]);
  const before = parse[2].slice(0, parse[3].length).replace(/^\.\.\./, '');
  return new TemplateSyntaxError(
    `parse error: ${parse[4]}`,
    line,
    excerptColumn(text.split('\n')[line - 1] ?? '', before),
  );
}

/**
 * The column on `lineText` right after the text `before` (up to 20 characters that precede the
 * error, line breaks removed): the last place the line's beginning agrees with it.
 */
function excerptColumn(lineText: string, before: string): number | undefined {
  for (let c = lineText.length; c >= 0; c--) {
    const head = lineText.slice(0, c);
    const agrees = head.length >= before.length ? head.endsWith(before) : before.endsWith(head);
    if (agrees) return c + 1;
  }
  return undefined;
}

// Zebric 0.6's helpers, so its templates render unchanged.
const helpers: Record<string, Handlebars.HelperDelegate> = {
  eq: (a: unknown, b: unknown) => a === b,
  neq: (a: unknown, b: unknown) => a !== b,
  gt: (a: number, b: number) => a > b,
  gte: (a: number, b: number) => a >= b,
  lt: (a: number, b: number) => a < b,
  lte: (a: number, b: number) => a <= b,
  // The last argument is Handlebars' options object.
  and: (...args: unknown[]) => args.slice(0, -1).every(Boolean),
  or: (...args: unknown[]) => args.slice(0, -1).some(Boolean),
  not: (value: unknown) => !value,
  formatDate: (date: unknown, format: unknown) => formatDate(date, format),
  json: (value: unknown) => JSON.stringify(value, null, 2),
  length: (value: unknown) => (Array.isArray(value) ? value.length : 0),
};
for (const [name, helper] of Object.entries(helpers)) handlebars.registerHelper(name, helper);

/** Zebric's formatDate: short, long, time, datetime (the server's locale), else ISO 8601; '' for no date. */
function formatDate(value: unknown, format: unknown): string {
  const d =
    value instanceof Date ? value : typeof value === 'string' || typeof value === 'number' ? new Date(value) : null;
  if (!d || Number.isNaN(d.getTime())) return '';
  switch (format) {
    case 'short':
      return d.toLocaleDateString();
    case 'long':
      return d.toLocaleDateString(undefined, { year: 'numeric', month: 'long', day: 'numeric' });
    case 'time':
      return d.toLocaleTimeString();
    case 'datetime':
      return d.toLocaleString();
    default:
      return d.toISOString();
  }
}

// --- Liquid ---

const escape = filters.escape as (this: unknown, value: unknown) => string;

const liquid = new Liquid({
  // Escapes every output but the app's own HTML; `| raw` opts out, as with 'escape'.
  outputEscape(this: unknown, value: unknown): string {
    return value instanceof SafeHtml ? value.html : escape.call(this, value);
  },
  ownPropertyOnly: true,
  // Templates are looked up here instead of the file system: there are none (and include, render
  // and layout are refused when a template compiles, below).
  templates: {},
});
liquid.registerFilter('formatDate', (value: unknown, format: unknown) => formatDate(value, format));
liquid.registerFilter('json', (value: unknown) => JSON.stringify(value, null, 2));

/** Tags that read another template: a template is one file and stands alone. */
class RefusedTag extends Tag {
  constructor(token: TagToken, remain: TopLevelToken[], engine: Liquid) {
    super(token, remain, engine);
    // Thrown while the template parses: liquidjs reports it at the tag, as a parse error.
    throw new Error(`{% ${token.name} %} is not available: a template is one file and stands alone`);
  }
  *render(): Generator<unknown, void, unknown> {}
}
for (const name of ['include', 'render', 'layout']) liquid.registerTag(name, RefusedTag);

function compileLiquid(text: string): Render {
  let templates: LiquidTemplate[];
  try {
    templates = liquid.parse(text);
  } catch (err) {
    throw liquidSyntaxError(err);
  }
  return (data) => liquid.renderSync(templates, data) as string;
}

/** liquidjs ends its messages with ", line:L, col:C" and keeps the position on the error's token. */
function liquidSyntaxError(err: unknown): TemplateSyntaxError {
  if (!(err instanceof Error)) return new TemplateSyntaxError(String(err));
  const token = (err as Error & { token?: { getPosition?: () => [number, number] } }).token;
  const reason = err.message.replace(/, line:\d+, col:\d+$/, '').split('\n')[0];
  const position = token?.getPosition?.();
  return position ? new TemplateSyntaxError(reason, position[0], position[1]) : new TemplateSyntaxError(reason);
}
