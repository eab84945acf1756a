// The generator's stages run parse -> validate -> model -> emit -> write (compile.ts), and their
// folders import each other in one direction only (generator/README.md):
//
//   diagnostics.ts, source.ts, suggest.ts   shared leaves: import nothing of the generator
//   parse/      reads TOML and locates keys           -> diagnostics.ts, source.ts
//   context.ts  one run's blueprint and diagnostics   -> parse, diagnostics.ts, source.ts
//   model/      the typed blueprint and what is derived from it alone (relation names, action risk)
//                                                     -> parse, context.ts
//   validate/   the checks                            -> parse, model, context.ts and the shared leaves
//   emit/       the generated files' text             -> parse, model
//   write/      the files on disk                     -> emit, model
//   compile.ts  runs the stages                       -> everything above
//
// validate and emit are siblings on top of model: a check never imports an emitter, and an emitter
// never imports a check; what both need (the relation names, an action's risk) lives in model/.
// Any folder may import runtime-lib/core and runtime-lib/rules (the rules the app applies, so that
// the generator and the app agree), nothing else of runtime-lib; validate also runtime-lib/pages
// (the template engines, so a template compiles at generation as in the app).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';
import { ROOT } from './support/apps.ts';
import { importViolations, type Layers } from './support/layers.ts';

const GENERATOR = path.join(ROOT, 'generator');
const RUNTIME = ['../runtime-lib/core', '../runtime-lib/rules'];
const LEAVES = ['diagnostics.ts', 'source.ts', 'suggest.ts', 'header.ts'];

const GENERATOR_LAYERS: Layers = {
  'diagnostics.ts': [],
  'source.ts': [],
  'suggest.ts': [],
  'header.ts': [],
  parse: ['diagnostics.ts', 'source.ts', ...RUNTIME],
  'context.ts': ['parse', 'diagnostics.ts', 'source.ts'],
  model: ['parse', 'context.ts', ...RUNTIME],
  contract: ['parse', 'model', 'header.ts', ...RUNTIME],
  validate: ['parse', 'model', 'contract', 'context.ts', ...LEAVES, ...RUNTIME, '../runtime-lib/pages'],
  emit: ['parse', 'model', 'contract', 'header.ts', ...RUNTIME],
  write: ['emit', 'model', 'header.ts'],
  'compile.ts': ['parse', 'context.ts', 'model', 'validate', 'emit', 'write', ...LEAVES],
};

describe('generator layers', () => {
  it('keeps every module in a unit the table lists', () => {
    const files = (fs.readdirSync(GENERATOR, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) =>
      f.endsWith('.ts'),
    );
    const stray = files.filter((f) => !Object.hasOwn(GENERATOR_LAYERS, f.split(path.sep)[0]));
    expect(stray).to.deep.equal([]);
  });

  it('imports only in the directions of generator/README.md: validate never imports emit', () => {
    expect(importViolations(GENERATOR, GENERATOR_LAYERS)).to.deep.equal([]);
  });

  it('finds an import against the table (a check that imports an emitter)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-layers-'));
    try {
      fs.mkdirSync(path.join(dir, 'validate'));
      fs.mkdirSync(path.join(dir, 'emit'));
      fs.mkdirSync(path.join(dir, 'model'));
      fs.writeFileSync(path.join(dir, 'model', 'types.ts'), 'export type T = 1;\n');
      const write = (file: string, text: string) => fs.writeFileSync(path.join(dir, file), text);
      write('emit/names.ts', "import type { T } from '../model/types.ts';\nexport const n: T = 1;\n");
      write('validate/check.ts', "import { n } from '../emit/names.ts';\nexport const m = n;\n");
      expect(importViolations(dir, GENERATOR_LAYERS)).to.deep.equal(['validate/check.ts imports emit/names.ts']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('states the directions in generator/README.md', () => {
    const readme = fs.readFileSync(path.join(GENERATOR, 'README.md'), 'utf8');
    for (const unit of Object.keys(GENERATOR_LAYERS)) {
      expect(readme).to.include(`\`${unit.endsWith('.ts') ? unit : `${unit}/`}\``);
    }
    expect(readme).to.include('validate/ never imports emit/');
  });
});
