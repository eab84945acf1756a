// The generated OpenAPI documents pass two independent validators: @readme/openapi-parser
// (schema validation of the document) and Redocly's linter. They describe what the app serves:
// health checks always, sign-up only while auth.signup allows it.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import { freshDir, generate, ROOT } from './support/apps.ts';
import { GOLDEN_DIR, GOLDEN_FIXTURES } from './support/goldens.ts';

type Rec = Record<string, unknown>;
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
  const long = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.length > 120);
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
      const r = spawnSync(
        process.execPath,
        [
          path.join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js'),
          'lint',
          '--extends=minimal',
          '--format=json',
          file,
        ],
        {
          encoding: 'utf8',
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        },
      );
      expect(r.status, r.stderr).to.equal(0);
      const report = JSON.parse(r.stdout) as {
        totals: { errors: number; warnings: number };
        problems: Array<{ ruleId: string; message: string }>;
      };
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
      expect(doc.paths['/readyz'].get.responses['503']).to.deep.equal({
        $ref: '#/components/responses/ServiceUnavailable',
      });
      const unavailable = doc.components.responses.ServiceUnavailable;
      expect(unavailable['x-error-codes']).to.deep.equal(['DATABASE_BUSY', 'STORAGE_UNAVAILABLE']);
      expect(unavailable.headers).to.have.property('Retry-After');
    });

    it(`${name}: every operation that reads or writes the database documents 503`, () => {
      const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Doc;
      // The document itself and the skill index are built at start: they read no database.
      const database = Object.entries(doc.paths).filter(
        ([p]) =>
          p.startsWith('/api/') && p !== '/api/openapi.json' && p !== '/api/skills' && !p.startsWith('/api/auth/'),
      );
      expect(database.length).to.be.greaterThan(3);
      for (const [p, item] of database) {
        for (const [method, op] of Object.entries(item as Record<string, { responses?: Record<string, unknown> }>)) {
          if (op.responses === undefined) continue;
          expect(op.responses['503'], `${method.toUpperCase()} ${p}`).to.deep.equal({
            $ref: '#/components/responses/ServiceUnavailable',
          });
        }
      }
    });
  }

  describe('promises what the app checks (helpdesk)', () => {
    const dir = path.join(freshDir('openapi-promises'), 'app');
    let doc: Rec;
    const ajv = new Ajv2020({ strict: false });
    // The format alone, as a validator that knows idn-email reads it, takes any address-like text
    // (0@com): what is tested is the schema's own pattern.
    ajv.addFormat('idn-email', true);
    before(async () => {
      const r = await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), dir);
      expect(r.status, r.stderr).to.equal(0);
      doc = JSON.parse(fs.readFileSync(path.join(dir, 'openapi.json'), 'utf8')) as Rec;
    });
    const at = (...keys: string[]): Rec => keys.reduce((v: Rec, k) => v[k] as Rec, doc);
    const takes = (schema: Rec, value: unknown) => ajv.validate(schema, value) as boolean;

    it('required text is not blank, and text has no control characters (LongText: line breaks)', () => {
      const title = at('components', 'schemas', 'TicketCreate', 'properties', 'title');
      for (const bad of ['', '   ', '\t', 'a\u0000b', 'bell\u0007', 'c1\u0085', 'del\u007f', 'line\nbreak'])
        expect(takes(title, bad), JSON.stringify(bad)).to.equal(false);
      for (const good of ['Printer on fire', ' padded ', 'Élise ✓']) expect(takes(title, good), good).to.equal(true);
      const body = at('components', 'schemas', 'TicketCreate', 'properties', 'body');
      expect(takes(body, 'two\nlines\r\n\tindented')).to.equal(true);
      expect(takes(body, '')).to.equal(true);
      expect(takes(body, 'nul\u0000')).to.equal(false);
    });

    it("e-mails are the app's own: 0@com is not one, Élise@exämple.de is", () => {
      for (const schema of [
        at('components', 'schemas', 'CustomerCreate', 'properties', 'email'),
        (
          at(
            'paths',
            '/api/auth/login',
            'post',
            'requestBody',
            'content',
            'application/json',
            'schema',
            'properties',
          ) as Rec
        ).email as Rec,
      ]) {
        for (const bad of ['0@com', 'a b@example.com', 'no-at.example.com', 'x@example.c0m'])
          expect(takes(schema, bad), bad).to.equal(false);
        for (const good of ['Élise@exämple.de', 'a.b+c@example.com']) expect(takes(schema, good), good).to.equal(true);
      }
    });

    it('Idempotency-Key and X-Agent-Run-ID are visible ASCII; API keys must send Idempotency-Key on each write', () => {
      const post = at('paths', '/api/tickets', 'post');
      const params = post.parameters as Rec[];
      const header = (name: string) => params.find((p) => p.name === name) as Rec;
      for (const name of ['Idempotency-Key', 'X-Agent-Run-ID']) {
        expect(takes(header(name).schema as Rec, 'run id with spaces'), name).to.equal(false);
        expect(takes(header(name).schema as Rec, 'run-1'), name).to.equal(true);
      }
      expect(header('Idempotency-Key').description).to.match(/API keys must send it.*IDEMPOTENCY_KEY_REQUIRED/);
      const writes: string[] = [];
      for (const [p, item] of Object.entries(at('paths'))) {
        for (const [method, op] of Object.entries(item as Rec)) {
          const o = op as { parameters?: Rec[]; responses?: Record<string, Rec> };
          if (!o.parameters?.some((x) => x.name === 'Idempotency-Key')) continue;
          writes.push(`${method} ${p}`);
          expect(o.responses?.['400'], `${method} ${p}`).to.deep.equal({
            $ref: '#/components/responses/BadWriteRequest',
          });
        }
      }
      expect(writes.length).to.be.greaterThan(10);
      expect(at('components', 'responses', 'BadWriteRequest', 'x-error-codes')).to.include('IDEMPOTENCY_KEY_REQUIRED');
      expect(at('components', 'responses', 'BadRequest', 'x-error-codes')).to.not.include('IDEMPOTENCY_KEY_REQUIRED');
    });

    it('offset stops where the app stops reading it; every operation past the pipeline declares 401', () => {
      const offset = ((at('paths', '/api/tickets', 'get').parameters as Rec[]).find((p) => p.name === 'offset') as Rec)
        .schema as Rec;
      expect(takes(offset, Number.MAX_SAFE_INTEGER)).to.equal(true);
      expect(takes(offset, Number.MAX_SAFE_INTEGER + 1)).to.equal(false);
      for (const [p, item] of Object.entries(at('paths'))) {
        if (p === '/healthz' || p === '/readyz') continue;
        for (const [method, op] of Object.entries(item as Rec)) {
          if (method === 'parameters') continue;
          expect((op as { responses: Rec }).responses['401'], `${method} ${p}`).to.not.equal(undefined);
        }
      }
    });

    it('the session: csrfToken null for API keys; the cookie __Host-<app>.sid, <app>.sid outside production', () => {
      const csrf = at('components', 'schemas', 'Session', 'properties', 'csrfToken');
      expect(takes(csrf, null)).to.equal(true);
      expect(takes(csrf, 'token')).to.equal(true);
      const scheme = at('components', 'securitySchemes', 'session');
      expect(scheme).to.include({ in: 'cookie', name: '__Host-helpdesk.sid' });
      expect(scheme.description).to.include('helpdesk.sid outside production');
    });
  });

  describe('with auth.signup = false', () => {
    let file: string;
    before(async () => {
      const out = path.join(freshDir('openapi-closed-signup'), 'app');
      await generate(path.join(ROOT, 'test/fixtures/valid/closed-signup/app.toml'), out);
      file = path.join(out, 'openapi.json');
    });

    it('has no sign-up operation, but sign-in and sessions', () => {
      const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Doc;
      const auth = Object.keys(doc.paths).filter((p) => p.startsWith('/api/auth/'));
      expect(auth).to.deep.equal(['/api/auth/login', '/api/auth/logout', '/api/auth/session']);
      expect(doc.tags.find((t) => t.name === 'Auth')).to.deep.equal({
        name: 'Auth',
        description: 'Sign-in and sessions of people',
      });
    });

    it('is valid OpenAPI 3.1, with no line longer than 120 characters', async () => {
      await expectValid(file);
      expectShortLines(file);
    });
  });
});
