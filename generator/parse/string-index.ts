// Where one character of a TOML string (or key) is written: the decoded text's offsets mapped
// back to the source, through quotes, escapes and multi-line strings.

// Everything that ends a bare key; being lenient here (rather than TOML's strict A-Za-z0-9_-)
// also accepts TOML 1.1's Unicode bare keys.
export const NOT_BARE = new Set([' ', '\t', '\r', '\n', '.', '=', '[', ']', '{', '}', ',', '#', '"', "'"]);

/**
 * Index in `chars` of the character that produces UTF-16 unit `offset` of the decoded text of the
 * key or string starting at `start`; the closing quote (or the end of a bare key) when `offset`
 * is at or past the end. Mirrors TOML's decoding: escapes in basic strings, none in literal ones,
 * and in multi-line strings a trimmed first newline and line-ending backslashes.
 */
export function indexWithin(chars: readonly string[], start: number, offset: number): number {
  const quote = chars[start];
  if (quote !== '"' && quote !== "'") {
    let decoded = 0;
    let i = start;
    while (i < chars.length && !NOT_BARE.has(chars[i]) && decoded + chars[i].length <= offset)
      decoded += chars[i++].length;
    return i;
  }
  const multi = chars[start + 1] === quote && chars[start + 2] === quote;
  let i = start + (multi ? 3 : 1);
  if (multi && chars[i] === '\r' && chars[i + 1] === '\n') i += 2;
  else if (multi && chars[i] === '\n') i++;
  let decoded = 0;
  while (i < chars.length) {
    const c = chars[i];
    if (c === quote) {
      if (!multi) return i;
      let run = 0;
      while (chars[i + run] === quote) run++;
      // Up to two quotes right before the closing delimiter are content.
      if (run >= 3) return i + Math.min(offset - decoded, run - 3, 2);
    }
    if (!multi && c === '\n') return i;
    let width = 1;
    let units = c.length;
    if (c === '\\' && quote === '"') {
      const after = lineEndingBackslashEnd(chars, i);
      if (multi && after !== undefined) {
        i = after;
        continue;
      }
      const e = chars[i + 1] ?? '';
      const hexLength = e === 'u' ? 4 : e === 'U' ? 8 : e === 'x' ? 2 : 0;
      width = 2 + hexLength;
      units = parseInt(chars.slice(i + 2, i + width).join(''), 16) > 0xffff ? 2 : 1;
    }
    if (offset < decoded + units) return i;
    decoded += units;
    i += width;
  }
  return chars.length;
}

/** After `\`, blanks and a newline: the index of the next non-blank character, else undefined. */
function lineEndingBackslashEnd(chars: readonly string[], i: number): number | undefined {
  let j = i + 1;
  while (chars[j] === ' ' || chars[j] === '\t' || chars[j] === '\r') j++;
  if (chars[j] !== '\n') return undefined;
  while (chars[j] === ' ' || chars[j] === '\t' || chars[j] === '\r' || chars[j] === '\n') j++;
  return j;
}
