// Renders data as TypeScript source for generated code, as Prettier prints it with bp's
// .prettierrc.json (the generated-style test checks it): single-quoted strings (double quotes
// when the text holds more single quotes than double ones), bare keys where they are identifiers,
// keys in the order given (callers order them). Given where the value starts, the layout keeps
// lines within MAX_WIDTH: an object, array or call stays on one line when it fits and otherwise
// breaks one entry per line, recursively (an array of several objects, or of several arrays, each
// with more than one entry, always breaks, as Prettier breaks it); a string too long for a line
// becomes `'...' +` pieces on lines of their own, broken after spaces only (never inside a word or
// a `{{ ... }}` template); after a short key (`url:`) a string that stays one piece stays on the
// key's line, as does a template literal after any head. The same input always gives the same
// text.

/** The widest line bp writes into a generated file. */
export const MAX_WIDTH = 120;

/** Generated code placed as is inside a literal: an identifier, say. */
export class Code {
  constructor(readonly text: string) {}
}

export const code = (text: string): Code => new Code(text);

/** A function call whose arguments are laid out like any other value: `rule('authenticated')`. */
export class Call {
  constructor(
    readonly callee: string,
    readonly args: readonly unknown[],
  ) {}
}

export const call = (callee: string, ...args: unknown[]): Call => new Call(callee, args);

/**
 * A string made of clauses, such as an SQL statement: one literal when it fits, else one
 * clause per line (a clause too long for its line wrapped after its commas). `${NAME}` in a
 * clause interpolates a constant of the generated module, making that piece a template literal.
 */
export class Clauses {
  constructor(readonly clauses: readonly string[]) {
    for (const clause of clauses) {
      if (/[`\\]/.test(clause)) throw new Error(`a clause cannot hold a backtick or backslash: ${clause}`);
    }
  }
}

export const clauses = (...parts: string[]): Clauses => new Clauses(parts);

/**
 * Where a value is written: `indent` is the indentation of the line it starts on (its closing
 * bracket returns there), `lead` the column it starts at, `trail` how many characters follow it
 * on its last line (a `,` or `;`).
 */
export interface Place {
  indent: number;
  lead: number;
  trail: number;
}

/**
 * The value as TypeScript. Without a place, on one line (for values the caller knows are
 * short); with one, laid out to fit MAX_WIDTH from there.
 */
export function tsLiteral(value: unknown, at?: Partial<Place>): string {
  if (at === undefined) return flat(value);
  const indent = at.indent ?? 0;
  return layout(value, indent, at.lead ?? indent, at.trail ?? 0);
}

/**
 * `head value` for a line indented by `indent` and followed by `trail` characters: a
 * declaration (`const COLUMNS =`) or a property (`name:`). A value that has to be split into
 * `+` pieces starts on the next line, as a person would wrap it.
 */
export function tsAssign(head: string, value: unknown, indent: number, trail = 0): string {
  const text = layout(value, indent, indent + head.length + 1, trail);
  if (!text.startsWith('\n')) return `${head} ${text}`;
  // One piece: Prettier keeps it on the head's line, however long, when it is a template literal
  // or follows a short key (`url:`).
  const one = ONE_LITERAL.test(text.trimStart()) && text.trimStart();
  if (one && (one.startsWith('`') || (head.endsWith(':') && head.length - 1 < SHORT_KEY))) return `${head} ${one}`;
  return `${head}${text}`;
}

/** One string or template literal, not a concatenation of them. */
const ONE_LITERAL = /^(['"`])(?:\\.|(?!\1)[^\\])*\1$/;

/** Prettier's shortest key it breaks a line after: its tab width (2) plus 3. */
const SHORT_KEY = 5;

/**
 * An object's entries as `key: value` texts for a block the caller writes, each laid out for a
 * line indented by `indent` and followed by a comma.
 */
export function tsProperties(entries: Record<string, unknown>, indent: number): string[] {
  return definedEntries(entries).map(([key, value]) => tsAssign(`${propertyKey(key)}:`, value, indent, 1));
}

/**
 * A type member (`name: A | B;`) for a line indented by `indent`; a union too long for the line
 * puts one member per line, each after a leading `|`.
 */
export function tsTypeMember(head: string, members: readonly string[], indent: number): string {
  const oneLine = `${head} ${members.join(' | ')};`;
  if (indent + oneLine.length <= MAX_WIDTH) return oneLine;
  const pad = ' '.repeat(indent + 2);
  return `${head}\n${members.map((m) => `${pad}| ${m}`).join('\n')};`;
}

/**
 * Prose for a comment: whitespace (line breaks included) collapsed to single spaces, so the text
 * cannot end its comment early, then filled into lines of at most `width` characters.
 */
export function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last].length + 1 + word.length <= width) lines[last] += ` ${word}`;
    else lines.push(word);
  }
  return lines;
}

/**
 * A `/** ... *\/` comment for a line indented by `indent`, on one line when it fits. `*\/` in the
 * text is written `*\\/`, so free text from a blueprint can never close the comment.
 */
export function tsDocComment(text: string, indent: number): string {
  const safe = text.replace(/\*\//g, '*\\/');
  const pad = ' '.repeat(indent);
  const oneLine = `/** ${wrapText(safe, Infinity).join(' ')} */`;
  if (indent + oneLine.length <= MAX_WIDTH) return oneLine;
  const lines = wrapText(safe, MAX_WIDTH - indent - 3).map((line) => `${pad} * ${line}`);
  return `/**\n${lines.join('\n')}\n${pad} */`;
}

/**
 * The array or object, or undefined (so that a literal leaves its key out) when it is empty: for
 * spec fields whose absence the runtime reads as empty.
 */
export function nonEmpty<T extends object>(value: T): T | undefined {
  return Object.keys(value).length > 0 ? value : undefined;
}

export function tsString(s: string): string {
  return quote(s, quoteFor(s));
}

/** A property key: bare when it is an identifier; `__proto__` computed, so it stays an own key. */
export function propertyKey(key: string): string {
  if (key === '__proto__') return `[${tsString(key)}]`;
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : tsString(key);
}

function definedEntries(value: object): Array<[string, unknown]> {
  return Object.entries(value).filter(([, v]) => v !== undefined);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Code || value instanceof Call || value instanceof Clauses)
  );
}

function flat(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return tsString(value);
  // `1e21`, not `1e+21`, as Prettier writes exponents.
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value).replace('e+', 'e');
  if (typeof value === 'boolean') return String(value);
  if (value instanceof Code) return value.text;
  if (value instanceof Call) return `${value.callee}(${value.args.map(flat).join(', ')})`;
  if (value instanceof Clauses) return piece(value.clauses.join(' '));
  if (Array.isArray(value)) return `[${value.map(flat).join(', ')}]`;
  if (isPlainObject(value)) {
    const entries = definedEntries(value);
    if (entries.length === 0) return '{}';
    return `{ ${entries.map(([k, v]) => `${propertyKey(k)}: ${flat(v)}`).join(', ')} }`;
  }
  throw new Error(`cannot render ${typeof value} as a literal`);
}

/** Text with `${NAME}` interpolations as a template literal, other text as a quoted string. */
function piece(text: string): string {
  return text.includes('${') ? `\`${text}\`` : tsString(text);
}

function layout(value: unknown, indent: number, lead: number, trail: number): string {
  const oneLine = flat(value);
  if (!oneLine.includes('\n') && lead + oneLine.length + trail <= MAX_WIDTH && !alwaysBreaks(value)) return oneLine;
  if (typeof value === 'string') return concatenation(splitString(value, indent + 2, trail), indent, lead);
  if (value instanceof Clauses) {
    const pieces = splitClauses(value, indent + 2, trail);
    // Pieces that fit on one line of their own stay on it, as Prettier joins them.
    const joined = pieces.join(' + ');
    const fits = lead > indent && indent + 2 + joined.length + trail <= MAX_WIDTH;
    return concatenation(fits ? [joined] : pieces, indent, lead);
  }
  if (value instanceof Call) return layoutCall(value, indent, lead, trail);
  if (Array.isArray(value) && value.length > 0) {
    return block(
      '[',
      ']',
      value.map((item) => ['', item]),
      indent,
    );
  }
  if (isPlainObject(value) && definedEntries(value).length > 0) {
    return block(
      '{',
      '}',
      definedEntries(value).map(([k, v]) => [`${propertyKey(k)}:`, v]),
      indent,
    );
  }
  return oneLine;
}

/**
 * Prettier's rule: an array of more than one element, all objects or all arrays, each with more
 * than one entry, goes one element per line even where it would fit on one; so does every value
 * that holds one.
 */
function alwaysBreaks(value: unknown): boolean {
  if (value instanceof Call) return value.args.some(alwaysBreaks);
  if (isPlainObject(value)) return definedEntries(value).some(([, v]) => alwaysBreaks(v));
  if (!Array.isArray(value)) return false;
  const wide = (item: unknown) => (Array.isArray(item) ? item.length : definedEntries(item as object).length) > 1;
  const alike = value.every(isPlainObject) || value.every((item) => Array.isArray(item));
  return (value.length > 1 && alike && value.every(wide)) || value.some(alwaysBreaks);
}

/** One entry per line, indented one level, each followed by a comma. */
function block(open: string, close: string, items: Array<[string, unknown]>, indent: number): string {
  const inner = indent + 2;
  const pad = ' '.repeat(inner);
  const lines = items.map(([head, item]) =>
    head === '' ? `${pad}${layout(item, inner, inner, 1)},` : `${pad}${tsAssign(head, item, inner, 1)},`,
  );
  return `${open}\n${lines.join('\n')}\n${' '.repeat(indent)}${close}`;
}

/** A lone object or array argument hugs the parentheses (`rule({` ... `})`); others go one per line. */
function layoutCall(value: Call, indent: number, lead: number, trail: number): string {
  const open = `${value.callee}(`;
  const [only] = value.args;
  if (value.args.length === 1 && (Array.isArray(only) || isPlainObject(only))) {
    return `${open}${layout(only, indent, lead + open.length, trail + 1)})`;
  }
  return block(
    open,
    ')',
    value.args.map((arg) => ['', arg]),
    indent,
  );
}

/**
 * Rendered pieces joined by `+`, one per line, indented one level. After a head (a key, `=`)
 * the text starts with a line break, so that every piece starts at the same column.
 */
function concatenation(pieces: string[], indent: number, lead: number): string {
  const pad = ' '.repeat(indent + 2);
  const joined = pieces.join(` +\n${pad}`);
  return lead > indent ? `\n${pad}${joined}` : joined;
}

/** Clauses one per line, each but the last ending in the space that joins it to the next. */
function splitClauses(value: Clauses, column: number, trail: number): string[] {
  const count = value.clauses.length;
  return value.clauses.flatMap((clause, i) =>
    wrap(i < count - 1 ? `${clause} ` : clause, column, i < count - 1 ? 2 : trail, ', ').map(piece),
  );
}

/** Each piece quoted on its own, as Prettier chooses its quotes piece by piece. */
function splitString(s: string, column: number, trail: number): string[] {
  return wrap(s, column, trail, ' ', (text) => tsString(text).length).map(tsString);
}

/**
 * Splits text into pieces that fit a line starting at `column` once rendered (measured by
 * `size`) and followed by ` +`, or by `trail` characters for the final piece. Pieces end just
 * after the last `separator` that fits, never inside a `{{ ... }}` template or a `${NAME}`
 * interpolation, and never inside a word: a piece whose first word alone is too long for the
 * line runs past the width to the next place it may end.
 */
function wrap(
  text: string,
  column: number,
  trail: number,
  separator: string,
  size: (text: string) => number = (text) => piece(text).length,
): string[] {
  const chars = Array.from(text);
  const cuts = cutPoints(chars, separator);
  const pieces: string[] = [];
  let start = 0;
  let next = 0; // the first cut after `start`
  while (start < chars.length) {
    const fits = (end: number) =>
      size(chars.slice(start, end).join('')) <= MAX_WIDTH - column - (end === chars.length ? trail : 2);
    let end = chars.length;
    if (!fits(end)) {
      while (next < cuts.length && cuts[next] <= start) next++;
      let last = next;
      while (last < cuts.length && fits(cuts[last])) last++;
      // The last cut that fits; else the first one, past the width; else the rest of the text.
      end = last > next ? cuts[last - 1] : (cuts[next] ?? chars.length);
    }
    pieces.push(chars.slice(start, end).join(''));
    start = end;
  }
  return pieces;
}

/**
 * Where a piece of `chars` may end: just after each `separator` that is outside the `{{ ... }}`
 * templates and `${...}` interpolations (those with a closing brace), and not at either end.
 */
function cutPoints(chars: readonly string[], separator: string): number[] {
  const text = chars.join('');
  // Code-unit offsets of the protected spans, in order.
  const spans: Array<[number, number]> = [];
  for (const match of text.matchAll(/\{\{.*?\}\}|\$\{[^}]*\}/gs))
    spans.push([match.index, match.index + match[0].length]);
  const cuts: number[] = [];
  let offset = 0;
  let span = 0;
  for (let i = 0; i < chars.length; i++) {
    const at = offset;
    offset += chars[i].length;
    if (!text.startsWith(separator, at)) continue;
    const end = at + separator.length;
    while (span < spans.length && spans[span][1] <= at) span++;
    const inside = span < spans.length && spans[span][0] < at;
    // A cut is a character index: count the characters up to the separator's end.
    if (!inside && end < text.length) cuts.push(i + Array.from(separator).length);
  }
  return cuts;
}

/** Prettier's choice: single quotes unless the text holds more single quotes than double ones. */
function quoteFor(s: string): "'" | '"' {
  const count = (q: string) => s.split(q).length - 1;
  return count("'") > count('"') ? '"' : "'";
}

const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * The quoted literal. Control characters, line and paragraph separators and lone surrogates
 * are escaped: a reader sees them, and the file stays valid UTF-8 that evaluates to `s`.
 */
function quote(s: string, q: "'" | '"'): string {
  // eslint-disable-next-line no-control-regex -- control characters are what must be escaped
  const escaped = s.replace(/[\\'"\u0000-\u001f\u007f\u2028\u2029]|\p{Cs}/gu, (c) => {
    if (c === '\\' || c === q) return `\\${c}`;
    if (c === "'" || c === '"') return c;
    return ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
  return `${q}${escaped}${q}`;
}
