// Test support for the Zebric 0.6 fixtures (test/fixtures/zebric/<construct>/app.toml): each is
// validated, generated with the real CLI, type-checked, migrated and built in-process on SQLite
// or PostgreSQL, then driven over real HTTP with every response checked against the app's own openapi.json.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { expect } from 'chai';
import { validateBlueprint } from '../../generator/compile.ts';
import type { Diagnostic } from '../../generator/diagnostics.ts';
import { nodeSourceHost } from '../../generator/source.ts';
import { freshDir, generate, ROOT, typecheck } from './apps.ts';
import { Api, type AppOnDatabase, bootOnDatabase, type ErrorBody } from './commands/harness.ts';
import { databaseUrl, type DatabaseKind } from './databases.ts';
import { listTree } from './goldens.ts';
import type { HttpResponse } from './apps.ts';

export const ZEBRIC = path.join(ROOT, 'test', 'fixtures', 'zebric');

/** A diagnostic as a user reads it, located as `app.toml:line:column`. */
export function shown(d: Diagnostic): string {
  const at = d.location ? `${path.basename(d.location.file)}:${d.location.line}:${d.location.column}` : '(no location)';
  return `${at} ${d.severity} ${d.code} ${d.path}: ${d.message}${d.hint ? ` (hint: ${d.hint})` : ''}`;
}

/**
 * Every diagnostic of a fixture's blueprint, as `shown` writes them; `PUBLIC_ENTITY` and
 * `COMMAND_WITHOUT_AUTH` only when asked for (fixtures without [auth] have them all).
 */
export function diagnosticsOf(fixture: string, options: { publicEntities?: boolean } = {}): string[] {
  const all = validateBlueprint(path.join(ZEBRIC, fixture, 'app.toml'), nodeSourceHost()).diagnostics;
  const kept = options.publicEntities
    ? all
    : all.filter((d) => d.code !== 'PUBLIC_ENTITY' && d.code !== 'COMMAND_WITHOUT_AUTH');
  return kept.map(shown);
}

export interface ZebricApp {
  app: AppOnDatabase;
  api: Api;
  appDir: string;
}

/** PostgreSQL wants a SESSION_SECRET even in development: every instance must share it. */
const SESSION_SECRET = 'zebric-fixture-session-secret-0123456789';

/**
 * Generates a fixture, type-checks the app in strict mode, and builds it on `database` (migrated
 * as `npm start` does), served over HTTP with every response checked against its openapi.json.
 */
export async function bootFixture(
  database: DatabaseKind,
  fixture: string,
  env: Record<string, string>,
  key: string,
): Promise<ZebricApp> {
  const appDir = path.join(freshDir(`zebric-${fixture}-${database}`), 'app');
  await generate(path.join(ZEBRIC, fixture, 'app.toml'), appDir);
  expectTypeChecks(appDir);
  const app = await bootOnDatabase(appDir, await databaseUrl(database, `zebric_${fixture}`), {
    SESSION_SECRET,
    ...env,
  });
  return { app, api: new Api(() => app.url, appDir, key), appDir };
}

/** The trees (by their hash) this process has type-checked without an error. */
const typeChecked = new Set<string>();

/**
 * The app type-checks in strict mode. A fixture is generated once per database with identical
 * bytes (the database is chosen when the app starts), so a tree already checked is not checked
 * again: its hash, over every path and byte, stands for the check (each check takes seconds).
 */
function expectTypeChecks(appDir: string): void {
  const hash = treeHash(appDir);
  if (typeChecked.has(hash)) return;
  const tsc = typecheck(appDir);
  expect(tsc.stdout + tsc.stderr, 'the generated app type-checks').to.equal('');
  typeChecked.add(hash);
}

/** A hash of every file under `dir`: its path and bytes, in sorted order. */
function treeHash(dir: string): string {
  const hash = createHash('sha256');
  for (const file of listTree(dir))
    hash
      .update(`${file}\0`)
      .update(readFileSync(path.join(dir, file)))
      .update('\0');
  return hash.digest('hex');
}

/** `code` of the error envelope and `field:code` of each detail. */
export function problems(res: HttpResponse): { code: string; details: string[] } {
  const error = (res.body as ErrorBody).error;
  return { code: error.code, details: (error.details ?? []).map((d) => `${d.field}:${d.code}`) };
}

let seq = 0;
/** A fresh Idempotency-Key: API keys must send one on every mutation. */
export const idem = (label = 'k'): string => `${label}-${++seq}-${Date.now()}`;

/** The app's openapi.json passes @readme/openapi-parser and `redocly lint --extends=minimal`, as the goldens' do. */
export async function expectValidOpenApi(appDir: string): Promise<void> {
  const file = path.join(appDir, 'openapi.json');
  const result = await validate(file);
  expect(result.valid, JSON.stringify('errors' in result ? result.errors : [], null, 2)).to.equal(true);
  const cli = path.join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
  const r = spawnSync(process.execPath, [cli, 'lint', '--extends=minimal', '--format=json', file], {
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  const report = JSON.parse(r.stdout) as { problems: Array<{ ruleId: string; message: string }> };
  expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).to.deep.equal([]);
  expect(r.status, r.stderr).to.equal(0);
}
