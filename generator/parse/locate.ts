// Source positions for TOML key paths. smol-toml parses values but reports no positions, so
// diagnostics about `entity.Ticket.fields.2.type` need this second, structure-only pass over
// the text. It records where every key path is defined and where each key and value starts, so
// that a position inside a string can be found too (string-index.ts); it never decodes values
// beyond that. It never throws: on malformed text (which smol-toml reports itself) it keeps
// whatever it managed to record.

import { indexWithin, NOT_BARE } from './string-index.ts';

export type KeyPath = readonly (string | number)[];
/** 1-based line and column; columns count Unicode code points. */
export interface Position {
  line: number;
  column: number;
}
export interface Locator {
  locate(path: KeyPath): Position | undefined;
  /**
   * Where the character at `offset` of a string written at `path` is: of its value, or of its
   * last key (`part = 'key'`). `offset` counts UTF-16 units of the decoded text, as JavaScript
   * strings (and so the expression parser) count; quotes, escapes, line-ending backslashes and
   * multi-line strings are accounted for. An offset at or past the end gives the closing quote.
   * Undefined when nothing is written at `path` (no fallback: the caller knows the key).
   */
  locateWithin(path: KeyPath, offset: number, part: 'key' | 'value'): Position | undefined;
  /** The text of a bare value (a number, boolean or date) written at `path`, as written. */
  bareValue(path: KeyPath): string | undefined;
}

export function buildLocator(text: string): Locator {
  const scanner = new Scanner(text);
  const positions = scanner.scan();
  return {
    locate(path) {
      if (path.length === 0) return { line: 1, column: 1 };
      // A diagnostic about a missing key points at the nearest thing that does exist.
      for (let n = path.length; n > 0; n--) {
        const found = positions.get(pathKey(path.slice(0, n)));
        if (found) return found;
      }
      return undefined;
    },
    locateWithin(path, offset, part) {
      const start = (part === 'key' ? scanner.keyStarts : scanner.valueStarts).get(pathKey(path));
      if (start === undefined) return undefined;
      return scanner.positionOf(indexWithin(scanner.chars, start, Math.max(0, offset)));
    },
    bareValue(path) {
      const start = scanner.valueStarts.get(pathKey(path));
      if (start === undefined) return undefined;
      let end = start;
      while (end < scanner.chars.length && !VALUE_END.has(scanner.chars[end])) end++;
      return scanner.chars.slice(start, end).join('').trim();
    },
  };
}

// JSON keeps `0` (array index) and `"0"` (table key) apart.
const pathKey = (path: KeyPath): string => JSON.stringify(path);

const BASIC_ESCAPES: Record<string, string> = {
  b: '\b',
  t: '\t',
  n: '\n',
  f: '\f',
  r: '\r',
  e: '\x1b',
  '"': '"',
  '\\': '\\',
};
// A bare value (number, boolean, date) runs until one of these; dates may contain a space.
const VALUE_END = new Set([',', ']', '}', '#', '\r', '\n']);

interface Key {
  segments: string[];
  starts: Position[];
  /** Index in the text of each segment's first character (its quote, when quoted). */
  indices: number[];
}

class Scanner {
  // Indexing code points, not UTF-16 units, makes column arithmetic match what editors show.
  readonly chars: string[];
  private i = 0;
  private line = 1;
  private lineStart = 0;
  private readonly positions = new Map<string, Position>();
  /** Text index where the last key of each path starts, and where its value starts. */
  readonly keyStarts = new Map<string, number>();
  readonly valueStarts = new Map<string, number>();
  /** Text index at which each line starts (line 1 after a byte order mark). */
  private readonly lineStarts: number[] = [];
  /** Element count of each array of tables, by resolved path (`[[a]]` ... `[[a]]` → 2). */
  private readonly tableArrays = new Map<string, number>();

  constructor(text: string) {
    this.chars = Array.from(text);
    // Editors do not show a byte order mark, so columns on line 1 start after it.
    if (this.chars[0] === '\uFEFF') this.i = this.lineStart = 1;
    this.lineStarts.push(this.i);
    this.chars.forEach((c, index) => {
      if (c === '\n') this.lineStarts.push(index + 1);
    });
  }

  /** Line and column of a text index (binary search over the line starts). */
  positionOf(index: number): Position {
    let low = 0;
    let high = this.lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.lineStarts[mid] <= index) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: index - this.lineStarts[low] + 1 };
  }

  scan(): Map<string, Position> {
    let table: KeyPath = [];
    while (this.i < this.chars.length) {
      this.skipBlank();
      const c = this.peek();
      if (c === '[') table = this.header() ?? table;
      else if (c !== undefined && c !== '\n' && c !== '#') this.keyValue(table);
      // Whatever is left on the line is a comment or an error; either way the next
      // statement starts on the next line.
      this.skipToNextLine();
    }
    return this.positions;
  }

  /** `[a.b]` or `[[a.b]]`; returns the resolved path of the table it opens. */
  private header(): KeyPath | undefined {
    const start = this.pos();
    const isArray = this.chars[this.i + 1] === '[';
    this.i += isArray ? 2 : 1;
    this.skipBlank();
    const key = this.key();
    if (!key) return undefined;
    // Each segment whose prefix is an array of tables refers to that array's last element,
    // so `[a.b]` after `[[a]]` is ['a', last, 'b'].
    const path: (string | number)[] = [];
    key.segments.forEach((segment, n) => {
      const count = this.tableArrays.get(pathKey(path));
      if (count !== undefined) path.push(count - 1);
      path.push(segment);
      this.record(path, key.starts[n], key.indices[n]);
    });
    if (!isArray) return path;
    const index = this.tableArrays.get(pathKey(path)) ?? 0;
    this.tableArrays.set(pathKey(path), index + 1);
    path.push(index);
    this.record(path, start);
    return path;
  }

  /** `a.b = value`, at top level or inside an inline table. */
  private keyValue(table: KeyPath): void {
    const key = this.key();
    if (!key) return;
    const path = [...table];
    key.segments.forEach((segment, n) => {
      path.push(segment);
      this.record(path, key.starts[n], key.indices[n]);
    });
    this.skipBlank();
    if (this.peek() !== '=') return;
    this.i++;
    this.skipBlank();
    this.value(path);
  }

  /** A possibly dotted key; undefined when the text here is not a key (malformed input). */
  private key(): Key | undefined {
    const key: Key = { segments: [], starts: [], indices: [] };
    for (;;) {
      const start = this.pos();
      const index = this.i;
      const segment = this.keySegment();
      if (segment === undefined) return undefined;
      key.segments.push(segment);
      key.starts.push(start);
      key.indices.push(index);
      this.skipBlank();
      if (this.peek() !== '.') return key;
      this.i++;
      this.skipBlank();
    }
  }

  private keySegment(): string | undefined {
    const c = this.peek();
    if (c === '"') return this.basicString();
    if (c === "'") return this.literalString();
    let segment = '';
    while (this.i < this.chars.length && !NOT_BARE.has(this.chars[this.i])) segment += this.chars[this.i++];
    return segment === '' ? undefined : segment;
  }

  private value(path: KeyPath): void {
    if (!this.valueStarts.has(pathKey(path))) this.valueStarts.set(pathKey(path), this.i);
    const c = this.peek();
    if (c === '[') this.array(path);
    else if (c === '{') this.inlineTable(path);
    else if (this.startsWith('"""')) this.multiLineString('"');
    else if (this.startsWith("'''")) this.multiLineString("'");
    else if (c === '"') this.basicString();
    else if (c === "'") this.literalString();
    else while (this.i < this.chars.length && !VALUE_END.has(this.chars[this.i])) this.i++;
  }

  private array(path: KeyPath): void {
    this.i++;
    for (let index = 0; ; index++) {
      this.skipBlankLinesAndComments();
      if (this.peek() === ']' || this.peek() === undefined) break;
      const elementPath = [...path, index];
      this.record(elementPath, this.pos());
      this.value(elementPath);
      if (!this.separator(']')) return;
    }
    if (this.peek() === ']') this.i++;
  }

  private inlineTable(path: KeyPath): void {
    this.i++;
    for (;;) {
      // Newlines and comments are not TOML 1.0 inside inline tables, but 1.1 allows them and
      // skipping them costs nothing.
      this.skipBlankLinesAndComments();
      const c = this.peek();
      if (c === '}') {
        this.i++;
        return;
      }
      if (c === undefined || c === ',' || c === ']') return;
      this.keyValue(path);
      if (!this.separator('}')) return;
    }
  }

  /**
   * Consumes the `,` after an array element or inline-table entry; true if the collection goes
   * on. On anything but `,` or `close` (an unclosed `[1, 2` say) it rewinds to the end of the
   * entry, so that the following lines are still read as statements.
   */
  private separator(close: string): boolean {
    const end = { i: this.i, line: this.line, lineStart: this.lineStart };
    this.skipBlankLinesAndComments();
    if (this.peek() === ',') {
      this.i++;
      return true;
    }
    if (this.peek() === close) return true;
    ({ i: this.i, line: this.line, lineStart: this.lineStart } = end);
    return false;
  }

  /** Reads a `"..."` string and returns its decoded text (needed for quoted keys). */
  private basicString(): string {
    let out = '';
    this.i++;
    while (this.i < this.chars.length) {
      const c = this.chars[this.i];
      // Unterminated: leave the line end to the caller, which keeps the line count.
      if (c === '\n') break;
      this.i++;
      if (c === '"') break;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.peek();
      if (e === undefined || e === '\n') break;
      this.i++;
      const hexLength = e === 'u' ? 4 : e === 'U' ? 8 : e === 'x' ? 2 : 0;
      if (hexLength === 0) {
        out += BASIC_ESCAPES[e] ?? e;
        continue;
      }
      let hex = '';
      while (hex.length < hexLength && /^[0-9a-fA-F]$/.test(this.peek() ?? '')) hex += this.chars[this.i++];
      const code = parseInt(hex, 16);
      if (code <= 0x10ffff) out += String.fromCodePoint(code);
    }
    return out;
  }

  private literalString(): string {
    let out = '';
    this.i++;
    while (this.i < this.chars.length && this.chars[this.i] !== "'" && this.chars[this.i] !== '\n') {
      out += this.chars[this.i++];
    }
    if (this.peek() === "'") this.i++;
    return out;
  }

  /** `"""..."""` or `'''...'''`: may span lines and hold `#`, `[` and `=` that are just text. */
  private multiLineString(quote: '"' | "'"): void {
    this.i += 3;
    while (this.i < this.chars.length) {
      const c = this.chars[this.i];
      if (c === quote && this.startsWith(quote.repeat(3))) {
        this.i += 3;
        // Up to two more quotes right before the closing delimiter belong to the content.
        for (let extra = 0; extra < 2 && this.peek() === quote; extra++) this.i++;
        return;
      }
      this.i++;
      if (c === '\n') this.newLine();
      // In basic strings an escaped character (notably `\"`) cannot close the string.
      else if (c === '\\' && quote === '"' && this.i < this.chars.length) {
        if (this.chars[this.i++] === '\n') this.newLine();
      }
    }
  }

  /** Spaces and tabs (and the `\r` of CRLF), staying on the current line. */
  private skipBlank(): void {
    while (this.peek() === ' ' || this.peek() === '\t' || this.peek() === '\r') this.i++;
  }

  private skipBlankLinesAndComments(): void {
    for (;;) {
      this.skipBlank();
      const c = this.peek();
      if (c === '#') this.skipComment();
      else if (c === '\n') {
        this.i++;
        this.newLine();
      } else return;
    }
  }

  private skipComment(): void {
    while (this.i < this.chars.length && this.chars[this.i] !== '\n') this.i++;
  }

  private skipToNextLine(): void {
    this.skipComment();
    if (this.peek() === '\n') {
      this.i++;
      this.newLine();
    }
  }

  /** Call right after consuming a `\n`. */
  private newLine(): void {
    this.line++;
    this.lineStart = this.i;
  }

  private record(path: KeyPath, position: Position, keyIndex?: number): void {
    // The first definition wins: `[a.b]` then `[a.c]` both mention `a`, the first one defines it.
    const key = pathKey(path);
    if (this.positions.has(key)) return;
    this.positions.set(key, position);
    if (keyIndex !== undefined) this.keyStarts.set(key, keyIndex);
  }

  private pos(): Position {
    return { line: this.line, column: this.i - this.lineStart + 1 };
  }

  private peek(): string | undefined {
    return this.chars[this.i];
  }

  private startsWith(s: string): boolean {
    for (let k = 0; k < s.length; k++) if (this.chars[this.i + k] !== s[k]) return false;
    return true;
  }
}
