// Every relative link of the project's Markdown (README.md, docs/, bench/README.md,
// runtime-lib/README.md) resolves: its file exists and its `#anchor` names a heading of that file,
// slugged as GitHub does. Pure and fast: reads files, generates nothing.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function markdownUnder(dir: string): string[] {
  return (fs.readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' }) as string[])
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join(dir, f));
}

const DOCS = ['README.md', 'bench/README.md', 'runtime-lib/README.md', ...markdownUnder('docs')].sort();

/** The file's prose: fenced code blocks and inline code spans removed, since a link there is text. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[^`\n]*?\1/g, '');
}

/** Inline links `[text](target)` and reference definitions `[label]: target`, images included. */
function links(text: string): string[] {
  const body = prose(text);
  const inline = [...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
  const defined = [...body.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]);
  return [...inline, ...defined];
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a file's headings give, a repeated one suffixed -1, -2 as GitHub does. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** What is wrong with one link of `file`, or undefined when it resolves. */
function problem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // http:, https:, mailto:: not a file of this repository
  const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
  const linked = rawPath === '' ? path.join(ROOT, file) : path.resolve(ROOT, path.dirname(file), decodeURI(rawPath));
  if (!linked.startsWith(ROOT + path.sep) && linked !== ROOT) return `${target}: outside the repository`;
  if (!fs.existsSync(linked)) return `${target}: no such file`;
  if (anchor === undefined) return undefined;
  if (!linked.endsWith('.md')) return `${target}: an anchor into a file that is not Markdown`;
  return anchors(fs.readFileSync(linked, 'utf8')).has(anchor) ? undefined : `${target}: no heading #${anchor}`;
}

describe('links in the documentation', () => {
  it('slugs headings as GitHub does', () => {
    expect(slug('What `bp generate` writes')).to.equal('what-bp-generate-writes');
    expect(slug('Grammar (issue 9, grammar)')).to.equal('grammar-issue-9-grammar');
    expect(slug('SQLite or PostgreSQL')).to.equal('sqlite-or-postgresql');
    expect(slug('Started by a skill action, and jobs')).to.equal('started-by-a-skill-action-and-jobs');
    expect([...anchors('# A\n\n```\n# not a heading\n```\n## A\n')]).to.deep.equal(['a', 'a-1']);
  });

  it('finds links in prose only', () => {
    expect(links('[a](x.md) `[b](y.md)` ![c](img.png)\n\n```\n[d](z.md)\n```\n[e]: ref.md\n')).to.deep.equal([
      'x.md',
      'img.png',
      'ref.md',
    ]);
  });

  for (const file of DOCS) {
    it(`${file}: every relative link resolves`, () => {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      const found = links(text);
      if (file === 'README.md') expect(found.length, 'links found in README.md').to.be.above(10);
      const broken = found.flatMap((target) => problem(file, target) ?? []);
      expect(broken).to.deep.equal([]);
    });
  }

  it('README.md links to every page under docs/ and to bench/README.md', () => {
    const linked = new Set(
      links(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'))
        .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t))
        .map((t) => path.normalize(t.split('#')[0])),
    );
    const pages = [...markdownUnder('docs'), 'bench/README.md', 'runtime-lib/README.md'];
    expect(pages.filter((p) => !linked.has(p))).to.deep.equal([]);
  });
});
