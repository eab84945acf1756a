// Kept traces feed the development admin server. In production nothing reads them, so the app
// keeps none (memory under load); every response still carries its X-Trace-ID.

import * as path from 'node:path';
import { expect } from 'chai';
import { freshDir, generate, request, ROOT } from './support/apps.ts';
import { bootInProcess, type InProcessApp } from './support/commands/harness.ts';

describe('trace retention', function () {
  this.timeout(120_000);
  let appDir: string;

  before(async () => {
    appDir = path.join(freshDir('trace-retention'), 'app');
    await generate(path.join(ROOT, 'fixtures/catalog/catalog.toml'), appDir);
  });

  async function tracesKept(
    env: Record<string, string>,
    dbName: string,
  ): Promise<{ kept: number; traceId: string | null }> {
    const app: InProcessApp = await bootInProcess(appDir, env, { dbName });
    try {
      const res = await request(app.url, 'GET', '/api/openapi.json');
      expect(res.status).to.equal(200);
      return { kept: app.traces.list().length, traceId: res.headers.get('x-trace-id') };
    } finally {
      await app.close();
    }
  }

  it('keeps traces in development', async () => {
    const { kept, traceId } = await tracesKept({}, 'dev.db');
    expect(kept).to.equal(1);
    expect(traceId).to.match(/^[0-9a-f]{32}$/);
  });

  it('keeps none in production, and still answers with X-Trace-ID', async () => {
    const { kept, traceId } = await tracesKept({ NODE_ENV: 'production' }, 'prod.db');
    expect(kept).to.equal(0);
    expect(traceId).to.match(/^[0-9a-f]{32}$/);
  });
});
