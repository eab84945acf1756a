// The paths of an expression with the offset of every segment, so that a name that does not
// resolve can be pointed at. Runs only on expressions that parsed (rules/expression-parse.ts), so
// it needs to tell names, dots, strings and numbers apart and nothing more.

export interface ExpressionPath {
  root: string;
  keys: string[];
  /** Offset in the source of each key. */
  offsets: number[];
}

type Token = { kind: 'name' | 'dot' | 'other'; text: string; offset: number };

/** Names that are operators or literals, never the root of a path. */
const NOT_ROOTS = new Set(['contains', 'in', 'true', 'false', 'null']);

export function expressionPaths(source: string): ExpressionPath[] {
  const tokens = tokenize(source);
  const paths: ExpressionPath[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind !== 'name' || NOT_ROOTS.has(token.text)) continue;
    const path: ExpressionPath = { root: token.text, keys: [], offsets: [] };
    while (tokens[i + 1]?.kind === 'dot' && tokens[i + 2]?.kind === 'name') {
      path.keys.push(tokens[i + 2].text);
      path.offsets.push(tokens[i + 2].offset);
      i += 2;
    }
    paths.push(path);
  }
  return paths;
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < source.length) {
    const ch = source[pos];
    const start = pos;
    if (/\s/.test(ch)) pos++;
    else if (/[0-9]/.test(ch)) {
      // A number, decimals and exponent included, so that `1.5` is not a path.
      pos = /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(source.slice(pos))![0].length + pos;
      tokens.push({ kind: 'other', text: source.slice(start, pos), offset: start });
    } else if (/[A-Za-z_]/.test(ch)) {
      while (pos < source.length && /[A-Za-z0-9_]/.test(source[pos])) pos++;
      tokens.push({ kind: 'name', text: source.slice(start, pos), offset: start });
    } else if (ch === "'" || ch === '"') {
      for (pos++; pos < source.length && source[pos] !== ch; pos++) if (source[pos] === '\\') pos++;
      pos++;
      tokens.push({ kind: 'other', text: source.slice(start, pos), offset: start });
    } else {
      pos++;
      tokens.push({ kind: ch === '.' ? 'dot' : 'other', text: ch, offset: start });
    }
  }
  return tokens;
}
