// runtime-lib's folders import each other in one direction only (runtime-lib/README.md): a module
// may import its own folder and the folders listed for it, never a folder above it.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { ROOT } from './support/apps.ts';

const RUNTIME = path.join(ROOT, 'runtime-lib');
const ALLOWED: Record<string, string[]> = {
  core: [],
  rules: ['core'],
  observe: ['core'],
  data: ['core', 'rules', 'observe'],
  commands: ['core', 'rules', 'observe', 'data'],
  workflows: ['core', 'observe', 'data', 'commands'],
  http: ['core', 'observe', 'data', 'commands', 'workflows'],
  uploads: ['core', 'data', 'http'],
  mcp: ['core', 'data', 'http'],
  plugins: ['core', 'data', 'commands', 'workflows', 'http'],
  pages: ['core', 'rules', 'data', 'commands', 'http', 'workflows'],
  auth: ['core', 'observe', 'data', 'http', 'pages'],
  admin: [
    'core',
    'rules',
    'observe',
    'data',
    'commands',
    'workflows',
    'http',
    'uploads',
    'mcp',
    'plugins',
    'pages',
    'auth',
  ],
};

function modules(): string[] {
  return (fs.readdirSync(RUNTIME, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => f.endsWith('.ts'));
}

describe('runtime-lib layers', () => {
  it('keeps every module in a folder the README lists', () => {
    const stray = modules().filter((f) => !Object.hasOwn(ALLOWED, f.split(path.sep)[0]) || !f.includes(path.sep));
    expect(stray).to.deep.equal([]);
  });

  it('imports only down the table of runtime-lib/README.md, and never the generator', () => {
    const violations: string[] = [];
    for (const file of modules()) {
      const folder = file.split(path.sep)[0];
      const source = fs.readFileSync(path.join(RUNTIME, file), 'utf8');
      for (const [, spec] of source.matchAll(/from '(\.[^']+)'/g)) {
        const target = path.relative(RUNTIME, path.resolve(path.dirname(path.join(RUNTIME, file)), spec));
        const targetFolder = target.split(path.sep)[0];
        if (target.startsWith('..')) violations.push(`${file} imports ${spec}, outside runtime-lib`);
        else if (targetFolder !== folder && !ALLOWED[folder].includes(targetFolder))
          violations.push(`${file} imports ${target}`);
      }
    }
    expect(violations).to.deep.equal([]);
  });

  it("uses pg's public API only: no pg-protocol, no dist/ path, no private member, no socket", () => {
    const violations: string[] = [];
    for (const file of modules()) {
      const source = fs.readFileSync(path.join(RUNTIME, file), 'utf8');
      for (const [, spec] of source.matchAll(/(?:from|import\()\s*'([^']+)'/g)) {
        if (/^pg-protocol(\/|$)/.test(spec) || /(^|\/)dist\//.test(spec)) violations.push(`${file} imports ${spec}`);
      }
      if (!/from 'pg'/.test(source)) continue;
      // What `pg` keeps to itself: members named with an underscore (`_emitMessage`,
      // `_queryQueue`), and the connection and socket under a client.
      for (const [found] of source.matchAll(/(?:\.\s*|\[\s*['"])_[A-Za-z]\w*|\.(?:connection|stream)\b/g))
        violations.push(`${file} uses ${found.replace(/\s+/g, '')}`);
    }
    expect(violations).to.deep.equal([]);
  });

  it('lists every folder in its README', () => {
    const readme = fs.readFileSync(path.join(RUNTIME, 'README.md'), 'utf8');
    for (const folder of Object.keys(ALLOWED)) expect(readme).to.include(`| \`${folder}/\` |`);
  });
});
