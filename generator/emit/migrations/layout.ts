// Migration SQL laid out to the width of every other generated file. Prisma's engine writes some
// statements on one long line (a foreign key constraint, the INSERT ... SELECT that copies a
// rebuilt table); SQL ignores whitespace outside literals and quoted names, so a long line is
// broken at spaces outside quotes, its continuation indented. A `--` comment continues as one.

const WIDTH = 120;

export function wrapSqlLines(sql: string): string {
  return sql
    .split('\n')
    .flatMap((line) => (line.length <= WIDTH ? [line] : wrapLine(line)))
    .join('\n');
}

/** Words that start a clause: a break goes before them when the line must break. */
const CLAUSES = new Set(['REFERENCES', 'SELECT', 'FROM', 'WHERE']);

function wrapLine(line: string): string[] {
  const indent = /^\s*/.exec(line)?.[0] ?? '';
  const comment = line.slice(indent.length).startsWith('--');
  const continuation = comment ? `${indent}-- ` : `${indent}    `;
  const lines: string[] = [];
  let current = '';
  const prefix = () => (lines.length === 0 ? indent : continuation);
  const flush = () => {
    if (current) lines.push(prefix() + current);
    current = '';
  };
  for (const phrase of phrases(splitOutsideQuotes(line.slice(indent.length)))) {
    if (current && prefix().length + current.length + 1 + phrase.join(' ').length > WIDTH) flush();
    for (const word of phrase) {
      // A clause longer than a line breaks between its words.
      if (current && prefix().length + current.length + 1 + word.length > WIDTH) flush();
      current = current ? `${current} ${word}` : word;
    }
  }
  flush();
  return lines;
}

/** Words grouped into clauses: a clause starts at REFERENCES, SELECT, FROM, WHERE, ON DELETE, ON UPDATE. */
function phrases(words: string[]): string[][] {
  const out: string[][] = [];
  words.forEach((word, i) => {
    const starts = CLAUSES.has(word) || (word === 'ON' && (words[i + 1] === 'DELETE' || words[i + 1] === 'UPDATE'));
    if (starts || out.length === 0) out.push([word]);
    else out[out.length - 1].push(word);
  });
  return out;
}

/** Space-separated words, where a quoted name or literal ("..." or '...') never splits. */
function splitOutsideQuotes(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | undefined;
  for (const ch of text) {
    if (quote) {
      word += ch;
      // A doubled quote inside a quoted part is an escaped quote: closing and reopening is the same.
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      word += ch;
    } else if (ch === ' ') {
      if (word) words.push(word);
      word = '';
    } else word += ch;
  }
  if (word) words.push(word);
  return words;
}
