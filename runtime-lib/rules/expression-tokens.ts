// The expression language's tokens: numbers, strings, names and punctuation, read from the
// source with their offsets (expression-parse.ts builds the tree from them).

export type Token =
  | { type: 'number'; text: string; offset: number; value: number }
  | { type: 'string'; text: string; offset: number; value: string }
  | { type: 'name'; text: string; offset: number }
  | { type: 'punct'; text: string; offset: number }
  | { type: 'end'; text: ''; offset: number }
  | { type: 'error'; text: ''; offset: number; failure: ParseFailure };

/** Thrown inside the parser only; parseExpression turns it into a ParseError. */
export class ParseFailure {
  constructor(
    readonly message: string,
    readonly offset: number,
  ) {}
}

// Longest first so that `>=` wins over `>`.
const PUNCTUATORS = [
  '||',
  '&&',
  '==',
  '!=',
  '>=',
  '<=',
  '>',
  '<',
  '+',
  '-',
  '*',
  '/',
  '%',
  '!',
  '(',
  ')',
  '[',
  ']',
  ',',
  '.',
];

const STRING_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t' };

function isDigit(ch: string | undefined): boolean {
  return ch !== undefined && ch >= '0' && ch <= '9';
}

function isNameStart(ch: string | undefined): boolean {
  return ch !== undefined && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch === '_');
}

function isNameChar(ch: string | undefined): boolean {
  return isNameStart(ch) || isDigit(ch);
}

/**
 * A lexical error becomes a final token rather than an immediate failure, so
 * that an earlier syntax error is still the one reported.
 */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  try {
    scanTokens(source, tokens);
  } catch (error) {
    if (!(error instanceof ParseFailure)) throw error;
    tokens.push({ type: 'error', text: '', offset: error.offset, failure: error });
  }
  return tokens;
}

function scanTokens(source: string, tokens: Token[]): void {
  let pos = 0;
  while (pos < source.length) {
    const ch = source[pos];
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      pos++;
      continue;
    }
    const start = pos;
    if (isDigit(ch)) {
      pos = scanNumber(source, pos);
      const text = source.slice(start, pos);
      const value = Number(text);
      // Infinity has no literal form, so it could not be formatted back to source.
      if (!Number.isFinite(value)) throw new ParseFailure(`number out of range "${text}"`, start);
      tokens.push({ type: 'number', text, offset: start, value });
      continue;
    }
    if (isNameStart(ch)) {
      while (isNameChar(source[pos])) pos++;
      tokens.push({ type: 'name', text: source.slice(start, pos), offset: start });
      continue;
    }
    if (ch === "'" || ch === '"') {
      const { value, end } = scanString(source, pos);
      pos = end;
      tokens.push({ type: 'string', text: source.slice(start, pos), offset: start, value });
      continue;
    }
    const threeChars = source.slice(pos, pos + 3);
    if (threeChars === '===' || threeChars === '!==') {
      throw new ParseFailure(
        `"${threeChars}" is not supported (use "${threeChars.slice(0, 2)}", which is already strict)`,
        pos,
      );
    }
    const punct = PUNCTUATORS.find((p) => source.startsWith(p, pos));
    if (punct !== undefined) {
      tokens.push({ type: 'punct', text: punct, offset: start });
      pos += punct.length;
      continue;
    }
    throw new ParseFailure(unexpectedCharacterMessage(source, pos), pos);
  }
  tokens.push({ type: 'end', text: '', offset: source.length });
}

function unexpectedCharacterMessage(source: string, pos: number): string {
  const codePoint = source.codePointAt(pos) ?? 0;
  const ch = String.fromCodePoint(codePoint);
  switch (ch) {
    case '=':
      return 'unexpected token "=" (assignment is not supported; use "==" to compare)';
    case '&':
      return 'unexpected character "&" (use "&&")';
    case '|':
      return 'unexpected character "|" (use "||")';
    case '$':
      return 'unexpected character "$" (in expressions the current user is "actor", e.g. actor.id)';
    default:
      return `unexpected character ${JSON.stringify(ch)}`;
  }
}

function scanNumber(source: string, start: number): number {
  let pos = start;
  while (isDigit(source[pos])) pos++;
  // A dot is only a decimal point when a digit follows; `1.x` is left to the parser to reject.
  if (source[pos] === '.' && isDigit(source[pos + 1])) {
    pos++;
    while (isDigit(source[pos])) pos++;
  }
  if (source[pos] === 'e' || source[pos] === 'E') {
    let exp = pos + 1;
    if (source[exp] === '+' || source[exp] === '-') exp++;
    if (isDigit(source[exp])) {
      while (isDigit(source[exp])) exp++;
      pos = exp;
    }
  }
  if (isNameChar(source[pos]) || (source[pos] === '.' && isDigit(source[pos + 1]))) {
    let end = pos;
    while (isNameChar(source[end]) || source[end] === '.') end++;
    throw new ParseFailure(`invalid number "${source.slice(start, end)}"`, start);
  }
  return pos;
}

function scanString(source: string, start: number): { value: string; end: number } {
  const quote = source[start];
  let value = '';
  let pos = start + 1;
  while (pos < source.length) {
    const ch = source[pos];
    if (ch === quote) return { value, end: pos + 1 };
    if (ch === '\\') {
      const escaped = source[pos + 1];
      if (escaped === undefined) break;
      const replacement = STRING_ESCAPES[escaped];
      if (replacement === undefined) {
        throw new ParseFailure(`invalid escape "\\${escaped}" in string (allowed: \\\\ \\' \\" \\n \\t)`, pos);
      }
      value += replacement;
      pos += 2;
      continue;
    }
    value += ch;
    pos++;
  }
  throw new ParseFailure('unterminated string', start);
}
