// The generated OpenAPI documents pass two independent validators: @readme/openapi-parser
// (schema validation of the document) and Redocly's linter. They describe what the app serves:
// health checks always, sign-up only while auth.signup allows it.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { expect } from 'chai';
import { freshDir, generate, ROOT } from './support/apps.ts';
import { GOLDEN_DIR, GOLDEN_FIXTURES } from './support/goldens.ts';

type Doc = {
  paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, { $ref?: string }> }>>;
  tags: Array<{ name: string; description: string }>;
  components: { responses: Record<string, { headers: Record<string, unknown>; 'x-error-codes': string[] }> };
};

async function expectValid(file: string): Promise<void> {
  const result = await validate(file);
  expect(result.valid, JSON.stringify('errors' in result ? result.errors : [], null, 2)).to.equal(true);
}

function expectShortLines(file: string): void {
  const long = fs.readFileSync(file, 'utf8').split('\n').filter((line) => line.length > 120);
  expect(long, `lines over 120 characters in ${file}`).to.deep.equal([]);
}

describe('generated OpenAPI documents', function () {
  this.timeout(60_000);
  for (const name of Object.keys(GOLDEN_FIXTURES)) {
    const file = path.join(GOLDEN_DIR, name, 'tree', 'openapi.json');

    it(`${name}: valid OpenAPI 3.1 for @readme/openapi-parser`, async () => {
      await expectValid(file);
    });

    it(`${name}: clean under redocly lint --extends=minimal`, () => {
      const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js'), 'lint', '--extends=minimal', '--format=json', file], {
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      expect(r.status, r.stderr).to.equal(0);
      const report = JSON.parse(r.stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string }> };
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).to.deep.equal([]);
      expect(report.totals).to.include({ errors: 0, warnings: 0 });
    });

    it(`${name}: no line longer than 120 characters`, () => {
      expectShortLines(file);
    });

    it(`${name}: health checks without credentials, /readyz also 503 with Retry-After`, () => {
      const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Doc;
      expect(doc.paths['/healthz'].get.security).to.equal(undefined);
      expect(Object.keys(doc.paths['/healthz'].get.responses)).to.deep.equal(['200']);
      expect(doc.paths['/readyz'].get.security).to.equal(undefined);
      expect(doc.paths['/readyz'].get.responses['503']).to.deep.equal({ $ref: '#/components/responses/ServiceUnavailable' });
      const unavailable = doc.components.responses.ServiceUnavailable;
      expect(unavailable['x-error-codes']).to.deep.equal(['DATABASE_BUSY', 'STORAGE_UNAVAILABLE']);
      expect(unavailable.headers).to.have.property('Retry-After');
    });

    it(`${name}: every operation that reads or writes the database documents 503`, () => {
      const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Doc;
      // The document itself and the skill index are built at start: they read no database.
      const database = Object.entries(doc.paths).filter(([p]) => p.startsWith('/api/') && p !== '/api/openapi.json' && p !== '/api/skills' && !p.startsWith('/api/auth/'));
      expect(database.length).to.be.greaterThan(3);
      for (const [p, item] of database) {
        for (const [method, op] of Object.entries(item as Record<string, { responses?: Record<string, unknown> }>)) {
          if (op.responses === undefined) continue;
          expect(op.responses['503'], `${method.toUpperCase()} ${p}`).to.deep.equal({ $ref: '#/components/responses/ServiceUnavailable' });
        }
      }
    });
  }

  describe('with auth.signup = false', () => {
    let file: string;
    before(() => {
      const out = path.join(freshDir('openapi-closed-signup'), 'app');
      generate(path.join(ROOT, 'test/fixtures/valid/closed-signup/app.toml'), out);
      file = path.join(out, 'openapi.json');
    });

    it('has no sign-up operation, but sign-in and sessions', () => {
      const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Doc;
      const auth = Object.keys(doc.paths).filter((p) => p.startsWith('/api/auth/'));
      expect(auth).to.deep.equal(['/api/auth/login', '/api/auth/logout', '/api/auth/session']);
      expect(doc.tags.find((t) => t.name === 'Auth')).to.deep.equal({ name: 'Auth', description: 'Sign-in and sessions of people' });
    });

    it('is valid OpenAPI 3.1, with no line longer than 120 characters', async () => {
      await expectValid(file);
      expectShortLines(file);
    });
  });
});
