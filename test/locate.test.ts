import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import fc from 'fast-check';
import { parse } from 'smol-toml';
import { buildLocator } from '../generator/parse/locate.ts';
import type { KeyPath, Position } from '../generator/parse/locate.ts';

const at = (text: string, path: KeyPath): Position | undefined => buildLocator(text).locate(path);

/** The source text from a position to the end of its line, so failures show what was hit. */
function textAt(text: string, position: Position): string {
  const line = text.replace(/^\uFEFF/, '').split(/\r?\n/)[position.line - 1] ?? '';
  return Array.from(line)
    .slice(position.column - 1)
    .join('');
}

describe('buildLocator', () => {
  describe('the brief example', () => {
    const text = [
      '[entity.Ticket]',
      'fields = [',
      '  { name = "id", type = "ULID", primary_key = true },',
      '  { name = "title", type = "Strng" },',
      ']',
    ].join('\n');

    it('locates a key inside an inline table inside an array', () => {
      expect(at(text, ['entity', 'Ticket', 'fields', 1, 'type'])).to.deep.equal({ line: 4, column: 21 });
    });

    it('locates an array element at its value', () => {
      expect(at(text, ['entity', 'Ticket', 'fields', 1])).to.deep.equal({ line: 4, column: 3 });
      expect(at(text, ['entity', 'Ticket', 'fields', 0, 'primary_key'])).to.deep.equal({ line: 3, column: 33 });
    });

    it('locates header segments at their own key', () => {
      expect(at(text, ['entity'])).to.deep.equal({ line: 1, column: 2 });
      expect(at(text, ['entity', 'Ticket'])).to.deep.equal({ line: 1, column: 9 });
      expect(at(text, ['entity', 'Ticket', 'fields'])).to.deep.equal({ line: 2, column: 1 });
    });

    it('falls back to the longest present prefix', () => {
      expect(at(text, ['entity', 'Ticket', 'fields', 1, 'nope'])).to.deep.equal({ line: 4, column: 3 });
      expect(at(text, ['entity', 'Ticket', 'fields', 7, 'type'])).to.deep.equal({ line: 2, column: 1 });
      expect(at(text, ['entity', 'Nope', 'fields'])).to.deep.equal({ line: 1, column: 2 });
    });

    it('answers the empty path with the start of the file and an unknown root with undefined', () => {
      expect(at(text, [])).to.deep.equal({ line: 1, column: 1 });
      expect(at(text, ['nope'])).to.equal(undefined);
      // An index is not the same as a key that happens to be digits.
      expect(at('a = [1]\n', ['a', '0'])).to.deep.equal({ line: 1, column: 1 });
      expect(at('a = [1]\n', ['a', 0])).to.deep.equal({ line: 1, column: 6 });
    });
  });

  describe('table headers', () => {
    it('reads quoted header keys and whitespace around dots', () => {
      const text = '[page."/tickets/:id".query.ticket]\nentity = "Ticket"\n[ a . \'b.c\' .d ]\nx = 1\n';
      expect(at(text, ['page', '/tickets/:id'])).to.deep.equal({ line: 1, column: 7 });
      expect(at(text, ['page', '/tickets/:id', 'query', 'ticket'])).to.deep.equal({ line: 1, column: 28 });
      expect(at(text, ['page', '/tickets/:id', 'query', 'ticket', 'entity'])).to.deep.equal({ line: 2, column: 1 });
      expect(at(text, ['a', 'b.c', 'd'])).to.deep.equal({ line: 3, column: 14 });
      expect(at(text, ['a', 'b.c', 'd', 'x'])).to.deep.equal({ line: 4, column: 1 });
    });

    it('keeps the first definition of a table shared by later headers', () => {
      const text = '[a.b]\nx = 1\n[a.c]\ny = 2\n';
      expect(at(text, ['a'])).to.deep.equal({ line: 1, column: 2 });
      expect(at(text, ['a', 'c'])).to.deep.equal({ line: 3, column: 4 });
      expect(at(text, ['a', 'c', 'y'])).to.deep.equal({ line: 4, column: 1 });
    });

    it('decodes escapes in quoted keys', () => {
      const text = '["a\\u0042\\"c"]\n"\\t" = 1\n';
      expect(at(text, ['aB"c'])).to.deep.equal({ line: 1, column: 2 });
      expect(at(text, ['aB"c', '\t'])).to.deep.equal({ line: 2, column: 1 });
    });
  });

  describe('arrays of tables', () => {
    const text = [
      '[[a]]', //                    1
      'x = 1',
      '[[a]]', //                    3
      'x = 2',
      '[a.b]', //                    5: a sub-table of the last element of a
      'y = 3',
      '[[a.c]]', //                  7: an array inside that element
      'z = 4',
      '[[a.c]]',
      '[skill.triage]', //          10
      'description = "d"',
      '[[skill.triage.actions]]', // 12
      'name = "one"',
      '[[skill.triage.actions]]', // 14
      'name = "two"',
    ].join('\n');

    it('numbers each [[header]] occurrence and locates the element at its header line', () => {
      expect(at(text, ['a'])).to.deep.equal({ line: 1, column: 3 });
      expect(at(text, ['a', 0])).to.deep.equal({ line: 1, column: 1 });
      expect(at(text, ['a', 1])).to.deep.equal({ line: 3, column: 1 });
      expect(at(text, ['a', 1, 'x'])).to.deep.equal({ line: 4, column: 1 });
    });

    it('resolves [a.b] after [[a]] to the last element', () => {
      expect(at(text, ['a', 1, 'b'])).to.deep.equal({ line: 5, column: 4 });
      expect(at(text, ['a', 1, 'b', 'y'])).to.deep.equal({ line: 6, column: 1 });
      expect(at(text, ['a', 1, 'c', 0, 'z'])).to.deep.equal({ line: 8, column: 1 });
      expect(at(text, ['a', 1, 'c', 1])).to.deep.equal({ line: 9, column: 1 });
    });

    it('nests an array of tables under a plain table', () => {
      expect(at(text, ['skill', 'triage', 'actions'])).to.deep.equal({ line: 12, column: 16 });
      expect(at(text, ['skill', 'triage', 'actions', 0, 'name'])).to.deep.equal({ line: 13, column: 1 });
      expect(at(text, ['skill', 'triage', 'actions', 1])).to.deep.equal({ line: 14, column: 1 });
      expect(at(text, ['skill', 'triage', 'actions', 1, 'name'])).to.deep.equal({ line: 15, column: 1 });
    });

    it('restarts the numbering of a nested array in each new parent element', () => {
      const nested = '[[a]]\n[[a.c]]\n[[a.c]]\n[[a]]\n[[a.c]]\nk = 1\n';
      expect(at(nested, ['a', 0, 'c', 1])).to.deep.equal({ line: 3, column: 1 });
      expect(at(nested, ['a', 1, 'c', 0, 'k'])).to.deep.equal({ line: 6, column: 1 });
    });
  });

  describe('keys', () => {
    it('records every segment of a dotted key', () => {
      const text = '[t]\na.b . c = 1\n';
      expect(at(text, ['t', 'a'])).to.deep.equal({ line: 2, column: 1 });
      expect(at(text, ['t', 'a', 'b'])).to.deep.equal({ line: 2, column: 3 });
      expect(at(text, ['t', 'a', 'b', 'c'])).to.deep.equal({ line: 2, column: 7 });
    });

    it('treats a quoted key containing dots as one key', () => {
      const text = 'precondition = { "variables.data.record.status" = "open" }\n\'lit.key\' = 2\n';
      expect(at(text, ['precondition', 'variables.data.record.status'])).to.deep.equal({ line: 1, column: 18 });
      expect(at(text, ['precondition', 'variables'])).to.deep.equal({ line: 1, column: 1 });
      expect(at(text, ['lit.key'])).to.deep.equal({ line: 2, column: 1 });
    });
  });

  describe('values', () => {
    it('does not record key-like text inside multi-line strings', () => {
      const text = [
        'a = """',
        '[fake.header]',
        'key = "x" # not a comment \\""" still inside',
        'also "" inside',
        'tail""""',
        "b = '''",
        '[[fake.array]]',
        "c = 'x' '' ''''",
        'd = 1',
        // Up to two quotes before the closing delimiter are content, not a new string.
        `e = { s = """q"""", t = '''r''''', u = 1 }`,
      ].join('\n');
      const locator = buildLocator(text);
      expect(locator.locate(['fake'])).to.equal(undefined);
      expect(locator.locate(['key'])).to.equal(undefined);
      expect(locator.locate(['also'])).to.equal(undefined);
      expect(locator.locate(['c'])).to.equal(undefined);
      expect(locator.locate(['b'])).to.deep.equal({ line: 6, column: 1 });
      expect(locator.locate(['d'])).to.deep.equal({ line: 9, column: 1 });
      expect(locator.locate(['e', 'u'])).to.deep.equal({ line: 10, column: 36 });
      expect(parse(text)).to.have.all.keys('a', 'b', 'd', 'e');
    });

    it('skips strings holding comment characters, brackets and escaped quotes', () => {
      const text = 's = "# [x] \\" = {" # real comment [y]\nl = \'C:\\path #[\' ; ignored\nn = 1\n';
      expect(at(text, ['n'])).to.deep.equal({ line: 3, column: 1 });
      expect(at(text, ['x'])).to.equal(undefined);
    });

    it('indexes multi-line arrays with comments, trailing commas and nesting', () => {
      const text = [
        'arr = [ # opening comment, with [brackets]',
        '  1,',
        '  # a comment line = 2',
        '  [ "x", [2, 3] ],',
        '  { k = { m = [1, { deep = true }] } },',
        '  "last",',
        ']',
        'after = 1',
      ].join('\n');
      expect(at(text, ['arr', 0])).to.deep.equal({ line: 2, column: 3 });
      expect(at(text, ['arr', 1])).to.deep.equal({ line: 4, column: 3 });
      expect(at(text, ['arr', 1, 1, 1])).to.deep.equal({ line: 4, column: 14 });
      expect(at(text, ['arr', 2, 'k', 'm', 1, 'deep'])).to.deep.equal({ line: 5, column: 21 });
      expect(at(text, ['arr', 3])).to.deep.equal({ line: 6, column: 3 });
      expect(at(text, ['arr', 4])).to.deep.equal({ line: 1, column: 1 });
      expect(at(text, ['after'])).to.deep.equal({ line: 8, column: 1 });
    });

    it('reads past numbers, booleans and dates, including dates with a space', () => {
      const text = 't = { d = 1979-05-27 07:32:00Z, n = -1_000.5e3, b = true, z = 07:32:00 }\nnext = inf\n';
      expect(at(text, ['t', 'n'])).to.deep.equal({ line: 1, column: 33 });
      expect(at(text, ['t', 'b'])).to.deep.equal({ line: 1, column: 49 });
      expect(at(text, ['t', 'z'])).to.deep.equal({ line: 1, column: 59 });
      expect(at(text, ['next'])).to.deep.equal({ line: 2, column: 1 });
    });
  });

  describe('encodings', () => {
    it('counts columns in code points', () => {
      const text = 'k = { s = "😀é", t = 1 }\n';
      expect(textAt(text, at(text, ['k', 't'])!)).to.match(/^t = 1/);
      expect(at(text, ['k', 't'])).to.deep.equal({ line: 1, column: 17 });
    });

    it('handles CRLF line endings and a byte order mark', () => {
      const text = '\uFEFF[a]\r\nx = """\r\n[b]\r\n"""\r\ny = [\r\n  1,\r\n  2,\r\n]\r\n';
      expect(at(text, ['a'])).to.deep.equal({ line: 1, column: 2 });
      expect(at(text, ['a', 'b'])).to.deep.equal({ line: 1, column: 2 });
      expect(at(text, ['b'])).to.equal(undefined);
      expect(at(text, ['a', 'y'])).to.deep.equal({ line: 5, column: 1 });
      expect(at(text, ['a', 'y', 1])).to.deep.equal({ line: 7, column: 3 });
    });
  });

  describe('malformed text', () => {
    it('keeps what it recorded before and after the damage', () => {
      const text = 'a = 1\nb = "unterminated\n[c\nd = [1, 2\ne = { f = 1, = }\n= 3\ng = 2\n';
      const locator = buildLocator(text);
      expect(locator.locate(['a'])).to.deep.equal({ line: 1, column: 1 });
      expect(locator.locate(['b'])).to.deep.equal({ line: 2, column: 1 });
      expect(locator.locate(['c', 'd'])).to.deep.equal({ line: 4, column: 1 });
      expect(locator.locate(['c', 'e', 'f'])).to.deep.equal({ line: 5, column: 7 });
      expect(locator.locate(['c', 'g'])).to.deep.equal({ line: 7, column: 1 });
    });

    it('never throws on arbitrary text', () => {
      const pieces = fc.constantFrom(
        '[',
        ']',
        '[[',
        '{',
        '}',
        '"',
        "'",
        '"""',
        "'''",
        '=',
        ',',
        '.',
        '#',
        '\\',
        '\n',
        '\r\n',
        ' ',
        'a',
        '1',
        'é',
        '😀',
      );
      fc.assert(
        fc.property(
          fc.oneof(
            fc.string(),
            fc.array(pieces, { maxLength: 40 }).map((p) => p.join('')),
          ),
          (text) => {
            buildLocator(text).locate(['a', 0, 'a']);
          },
        ),
      );
    });
  });

  describe('locateWithin: one character of a string as written', () => {
    /** The position of `offset` in the string at `path`, with the source text from there on. */
    const within = (text: string, path: KeyPath, offset: number, part: 'key' | 'value' = 'value') => {
      const position = buildLocator(text).locateWithin(path, offset, part);
      return position && { ...position, text: textAt(text, position) };
    };

    it('counts the opening quote and each escape of a basic string as written', () => {
      const text = String.raw`policy = "a \"q\" \u00e9\U0001F600 && x"` + '\n';
      // Decoded: a "q" é😀 && x (the emoji is two UTF-16 units, as the expression parser counts).
      expect(within(text, ['policy'], 0)).to.deep.equal({
        line: 1,
        column: 11,
        text: String.raw`a \"q\" \u00e9\U0001F600 && x"`,
      });
      expect(within(text, ['policy'], 2)).to.deep.include({ column: 13 });
      expect(within(text, ['policy'], 3)).to.deep.include({ column: 15 });
      expect(within(text, ['policy'], 6)).to.deep.include({ column: 19 });
      expect(within(text, ['policy'], 7)).to.deep.include({ column: 25 });
      expect(within(text, ['policy'], 8)).to.deep.include({ column: 25 });
      expect(within(text, ['policy'], 10)).to.deep.include({ column: 36, text: '&& x"' });
    });

    it('reads literal strings without escapes', () => {
      const text = String.raw`t = { read = 'a\b == 😀 &&' }` + '\n';
      expect(within(text, ['t', 'read'], 1)).to.deep.include({ column: 16, text: String.raw`\b == 😀 &&' }` });
      expect(within(text, ['t', 'read'], 10)).to.deep.include({ column: 24, text: "&&' }" });
    });

    it('points an offset at the end of the text at the closing quote', () => {
      expect(within('a = "x &&"\n', ['a'], 4)).to.deep.equal({ line: 1, column: 10, text: '"' });
      expect(within('a = "x &&"\n', ['a'], 99)).to.deep.include({ column: 10 });
    });

    it('follows multi-line strings across lines, trimming the first line break', () => {
      const basic = 'update = """\nactor.id &&\n  x' + String.raw`\"y"""` + '\n';
      // Decoded: actor.id &&\n  x"y
      expect(within(basic, ['update'], 0)).to.deep.equal({ line: 2, column: 1, text: 'actor.id &&' });
      expect(within(basic, ['update'], 14)).to.deep.equal({ line: 3, column: 3, text: String.raw`x\"y"""` });
      expect(within(basic, ['update'], 15)).to.deep.include({ line: 3, column: 4 });
      expect(within(basic, ['update'], 16)).to.deep.include({ line: 3, column: 6 });
      const literal = "delete = '''\r\nrecord.a ||\r\n   $x'''\r\n";
      // Decoded: record.a ||\r\n   $x (CRLF kept, as smol-toml keeps it).
      expect(within(literal, ['delete'], 16)).to.deep.include({ line: 3, column: 4, text: "$x'''" });
    });

    it('skips a line-ending backslash and the blanks and line breaks after it', () => {
      const text = 'p = """a ' + '\\' + '  \n\n    b"""\n';
      // Decoded: "a b".
      expect(within(text, ['p'], 2)).to.deep.equal({ line: 3, column: 5, text: 'b"""' });
    });

    it('counts up to two quotes before the closing delimiter as text', () => {
      expect(within('a = """x"""""\n', ['a'], 1)).to.deep.include({ column: 9 });
      expect(within('a = """x"""""\n', ['a'], 2)).to.deep.include({ column: 10 });
      expect(within('a = """x"""""\n', ['a'], 3)).to.deep.include({ column: 11 });
    });

    it('locates inside keys: quoted, literal and bare', () => {
      const text = `t = { "cust.nmae" = 1, 'a.b' = 2, plain = 3 }\n`;
      expect(within(text, ['t', 'cust.nmae'], 5, 'key')).to.deep.include({
        column: 13,
        text: `nmae" = 1, 'a.b' = 2, plain = 3 }`,
      });
      expect(within(text, ['t', 'a.b'], 2, 'key')).to.deep.include({ column: 27 });
      expect(within(text, ['t', 'plain'], 2, 'key')).to.deep.include({ column: 37 });
      expect(within(text, ['t', 'nope'], 0, 'key')).to.equal(undefined);
    });

    it('never throws on arbitrary text', () => {
      const pieces = fc.constantFrom(
        'a = ',
        '"',
        "'",
        '"""',
        "'''",
        '\\',
        '\\u',
        '\n',
        '\r\n',
        ' ',
        'a',
        '😀',
        '{',
        '}',
      );
      fc.assert(
        fc.property(
          fc.array(pieces, { maxLength: 30 }).map((p) => p.join('')),
          fc.nat(40),
          (text, offset) => {
            const locator = buildLocator(text);
            locator.locateWithin(['a'], offset, 'value');
            locator.locateWithin(['a'], offset, 'key');
          },
        ),
      );
    });

    it('property: each character of a generated string is found as itself or as the escape that wrote it', () => {
      fc.assert(
        fc.property(stringArbitrary, (node) => {
          const text = `k = ${node.text}\n`;
          const decoded = parse(text).k as string;
          const locator = buildLocator(text);
          for (let i = 0; i < decoded.length; i++) {
            // The second half of a surrogate pair is the same character.
            if (i > 0 && decoded.charCodeAt(i - 1) >= 0xd800 && decoded.charCodeAt(i - 1) <= 0xdbff) continue;
            const position = locator.locateWithin(['k'], i, 'value');
            const found = Array.from(textAt(text, position!))[0] ?? '\n';
            const expected = String.fromCodePoint(decoded.codePointAt(i)!);
            expect([expected, '\\'], `offset ${i} of ${JSON.stringify(decoded)} in ${text}`).to.include(found);
          }
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('the helpdesk example', () => {
    const text = readFileSync('/work/shared/spec/examples/helpdesk/helpdesk.toml', 'utf8');
    const locator = buildLocator(text);
    const cases: [KeyPath, Position, string][] = [
      [['entity', 'Ticket', 'fields', 3, 'type'], { line: 52, column: 22 }, 'type = "Enum"'],
      [['entity', 'Ticket', 'fields', 3, 'values', 2], { line: 52, column: 70 }, '"resolved"'],
      [['skill', 'triage', 'actions', 2], { line: 117, column: 1 }, '[[skill.triage.actions]]'],
      [['skill', 'triage', 'actions', 2, 'mapParams', 'ticketId'], { line: 124, column: 15 }, 'ticketId = "ticketId"'],
      [['page', '/tickets/:id', 'query', 'ticket', 'where', 'id'], { line: 182, column: 11 }, 'id = "$params.id"'],
      [['workflow', 'EscalateTicket', 'steps', 0, 'where', 'status'], { line: 145, column: 108 }, 'status = "open"'],
      [
        ['workflow', 'EscalateTicket', 'precondition', 'variables.data.record.status'],
        { line: 141, column: 18 },
        '"variables.data.record.status"',
      ],
      [['auth', 'apiKeys', 1, 'scopes', 0], { line: 31, column: 11 }, '"tickets.read"'],
      [
        ['entity', 'Customer', 'access', 'delete', '$currentUser.role'],
        { line: 45, column: 12 },
        '"$currentUser.role"',
      ],
    ];
    for (const [path, position, source] of cases) {
      it(`locates ${path.join('.')}`, () => {
        expect(locator.locate(path)).to.deep.equal(position);
        expect(textAt(text, position).startsWith(source)).to.equal(true);
      });
    }

    it('locates every path of the parsed blueprint exactly', () => {
      expectAllPathsLocated(text);
    });
  });

  describe('property: generated documents', () => {
    it('locates every path smol-toml parses at that key or element', () => {
      fc.assert(
        fc.property(documentArbitrary, (doc) => {
          expectAllPathsLocated(serialize(doc));
        }),
        { numRuns: 300 },
      );
    });
  });
});

/**
 * Every path of the parse is found at its own key (the text there starts with the key as the
 * serializer writes it) or element, and not at a fallback: a fallback would return exactly the
 * parent's position.
 */
function expectAllPathsLocated(text: string): void {
  const locator = buildLocator(text);
  for (const path of allPaths(parse(text), [])) {
    const position = locator.locate(path);
    expect(position, `${JSON.stringify(path)} in\n${text}`).to.not.equal(undefined);
    const last = path[path.length - 1];
    const found = textAt(text, position!);
    if (typeof last === 'string') {
      expect(
        [keyText(last), `'${last}'`].some((k) => found.startsWith(k)),
        `${JSON.stringify(path)} at "${found}" in\n${text}`,
      ).to.equal(true);
    } else {
      expect(found, `${JSON.stringify(path)} in\n${text}`).to.match(/^[^\s,#\]}]/);
    }
    if (path.length > 1) {
      expect(position, `${JSON.stringify(path)} is a fallback in\n${text}`).to.not.deep.equal(
        locator.locate(path.slice(0, -1)),
      );
    }
  }
}

function* allPaths(value: unknown, path: (string | number)[]): Generator<KeyPath> {
  if (path.length > 0) yield path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) yield* allPaths(value[i], [...path, i]);
  } else if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    for (const [key, child] of Object.entries(value)) yield* allPaths(child, [...path, key]);
  }
}

// A generated document is a tree whose nodes also carry how to write them, so one property
// covers headers, arrays of tables, dotted keys, inline tables and multi-line arrays and strings.
interface ScalarNode {
  kind: 'scalar';
  text: string;
}
interface ArrayNode {
  kind: 'array';
  items: Node[];
  multiline: boolean;
  /** Written as `[[header]]` sections when every item is a table and the context allows. */
  asTables: boolean;
}
interface TableNode {
  kind: 'table';
  entries: [string, Node][];
  style: 'section' | 'inline' | 'dotted';
}
type Node = ScalarNode | ArrayNode | TableNode;
interface Doc {
  root: TableNode;
  crlf: boolean;
  spacedHeaders: boolean;
  comments: boolean;
}

const COMMENT = '# [fake] k = "v" {';

const stringArbitrary = fc
  .tuple(
    fc.array(
      fc.constantFrom(
        'a',
        ' ',
        '#',
        '[fake.header]',
        'key = "x"',
        '"',
        "'",
        '\\',
        '\n',
        '\t',
        '{',
        ',',
        ']',
        '=',
        'é',
        '😀',
      ),
      { maxLength: 6 },
    ),
    fc.constantFrom('basic', 'literal', 'multiline', 'multiline-literal'),
  )
  .map(([parts, style]): ScalarNode => {
    const s = parts.join('');
    const escaped = s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
    let text = `"${escaped.replace(/\n/g, '\\n').replace(/\t/g, '\\t')}"`;
    if (style === 'literal' && !/['\n]/.test(s)) text = `'${s}'`;
    else if (style === 'multiline') text = `"""${escaped}"""`;
    else if (style === 'multiline-literal') text = s.includes("'") ? `"""${escaped}"""` : `'''${s}'''`;
    return { kind: 'scalar', text };
  });

const scalarArbitrary: fc.Arbitrary<Node> = fc.oneof(
  fc.integer().map((n): ScalarNode => ({ kind: 'scalar', text: String(n) })),
  fc
    .constantFrom(
      '1.5',
      '-0.25',
      '6.02e23',
      'inf',
      'nan',
      '+1_000',
      'true',
      'false',
      '1979-05-27T07:32:00Z',
      '1979-05-27 07:32:00',
      '07:32:00',
      '1979-05-27',
    )
    .map((text): ScalarNode => ({ kind: 'scalar', text })),
  stringArbitrary,
);

const keyArbitrary = fc.constantFrom('a', 'b', 'x_1', 'B-2', '1', 'with.dot', 'sp ace', '/t/:id', 'é', 'q"t', '');

const { table: tableArbitrary } = fc.letrec<{ node: Node; array: ArrayNode; table: TableNode }>((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, scalarArbitrary, tie('array'), tie('table')),
  array: fc.record({
    kind: fc.constant('array' as const),
    items: fc.oneof(fc.array(tie('node'), { maxLength: 3 }), fc.array(tie('table'), { minLength: 1, maxLength: 3 })),
    multiline: fc.boolean(),
    asTables: fc.boolean(),
  }),
  table: fc.record({
    kind: fc.constant('table' as const),
    entries: fc.uniqueArray(fc.tuple(keyArbitrary, tie('node')), { maxLength: 4, selector: (entry) => entry[0] }),
    style: fc.constantFrom('section' as const, 'inline' as const, 'dotted' as const),
  }),
}));

const documentArbitrary: fc.Arbitrary<Doc> = fc.record({
  root: tableArbitrary,
  crlf: fc.boolean(),
  spacedHeaders: fc.boolean(),
  comments: fc.boolean(),
});

const keyText = (key: string): string => (/^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key));

const isSectionArray = (node: Node): node is ArrayNode =>
  node.kind === 'array' && node.asTables && node.items.length > 0 && node.items.every((item) => item.kind === 'table');

function serialize(doc: Doc): string {
  const lines: string[] = doc.comments ? [COMMENT] : [];
  writeSection(doc, doc.root, [], lines);
  const text = `${lines.join('\n')}\n`;
  return doc.crlf ? text.replace(/\n/g, '\r\n') : text;
}

/** A table written as `key = value` lines followed by its sub-tables' headers. */
function writeSection(doc: Doc, table: TableNode, path: string[], lines: string[]): void {
  const subSections: [string, TableNode | ArrayNode][] = [];
  for (const [key, node] of table.entries) {
    if ((node.kind === 'table' && node.style === 'section') || isSectionArray(node)) subSections.push([key, node]);
    else for (const pair of keyValues(doc, [key], node)) lines.push(doc.comments ? `${pair} ${COMMENT}` : pair);
  }
  for (const [key, node] of subSections) {
    const sub = [...path, key];
    const header = sub.map(keyText).join(doc.spacedHeaders ? ' . ' : '.');
    if (node.kind === 'table') {
      lines.push(`[${header}]`);
      writeSection(doc, node, sub, lines);
    } else {
      for (const item of node.items) {
        lines.push(`[[${header}]]`);
        writeSection(doc, item as TableNode, sub, lines);
      }
    }
  }
}

/** `key = value` pairs; a dotted-style table contributes one dotted pair per leaf. */
function keyValues(doc: Doc, keys: string[], node: Node): string[] {
  if (node.kind === 'table' && node.style === 'dotted' && node.entries.length > 0) {
    return node.entries.flatMap(([key, child]) => keyValues(doc, [...keys, key], child));
  }
  return [`${keys.map(keyText).join('.')} = ${inlineValue(doc, node)}`];
}

function inlineValue(doc: Doc, node: Node): string {
  if (node.kind === 'scalar') return node.text;
  if (node.kind === 'table') {
    const pairs = node.entries.flatMap(([key, child]) => keyValues(doc, [key], child));
    return pairs.length === 0 ? '{}' : `{ ${pairs.join(', ')} }`;
  }
  const items = node.items.map((item) => inlineValue(doc, item));
  if (!node.multiline) return `[${items.join(', ')}]`;
  const comment = doc.comments ? `\n  ${COMMENT}` : '';
  return `[${comment}\n${items.map((item) => `  ${item},${comment}`).join('\n')}\n]`;
}
