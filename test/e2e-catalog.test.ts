// End to end on the second fixture, which uses every scalar field type: each type's validation
// and stored form over HTTP, checked against the generated OpenAPI document, on SQLite and on
// PostgreSQL; and the tracing core, read from the app's trace store in-process.

import * as path from 'node:path';
import { expect } from 'chai';
import {
  freshDir,
  freshKey,
  generate,
  request,
  ROOT,
  startApp,
  typecheck,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { OpenApiChecker } from './support/openapi-check.ts';
import { bootInProcess, type InProcessApp } from './support/commands/harness.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;
type ErrorBody = { error: { code: string; details?: Array<{ field?: string; code: string }> } };

const KEYS = {
  CATALOG_OPS_KEY: 'ops-key-0123456789abcdef',
  CATALOG_READER_KEY: 'reader-key-0123456789abcdef',
  CATALOG_EDITOR_KEY: 'editor-key-0123456789abcdef',
};

for (const database of DATABASES)
  describe(`generated catalog app (end to end, every field type, ${database})`, function () {
    this.timeout(120_000);
    let appDir: string;
    let app: RunningApp;
    let api: OpenApiChecker;

    const call = async (
      method: string,
      template: string,
      urlPath: string,
      json?: unknown,
      key: string | null = KEYS.CATALOG_OPS_KEY,
    ): Promise<HttpResponse> => {
      const headers: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
      // API keys must send an Idempotency-Key on every mutation.
      if (key !== null && method !== 'GET') headers['idempotency-key'] = freshKey();
      const res = await request(app.url, method, urlPath, json === undefined ? { headers } : { json, headers });
      api.check(method, template, res);
      return res;
    };
    const createProduct = (body: Rec) =>
      call('POST', '/api/products', '/api/products', {
        sku: `sku-${Math.random()}`,
        name: 'Lamp',
        priceCents: 1999,
        ...body,
      });
    const fieldErrors = (res: HttpResponse) =>
      (res.body as ErrorBody).error.details?.map((d) => `${d.field}:${d.code}`);

    before(async () => {
      appDir = path.join(freshDir(`e2e-catalog-${database}`), 'app');
      await generate(path.join(ROOT, 'fixtures/catalog/catalog.toml'), appDir);
      api = new OpenApiChecker(path.join(appDir, 'openapi.json'));
      // PostgreSQL wants a SESSION_SECRET even in development: every instance must share it.
      const secret: Record<string, string> =
        database === 'postgres' ? { SESSION_SECRET: 'e2e-catalog-session-secret-0123456789' } : {};
      app = await startApp(appDir, { ...KEYS, ...secret, DATABASE_URL: await databaseUrl(database, 'catalog') });
    });
    after(async () => app?.stop());

    it('typechecks in strict mode', () => {
      const r = typecheck(appDir);
      expect(r.stdout + r.stderr).to.equal('');
      expect(r.status).to.equal(0);
    });

    it('applies typed defaults: Float, Boolean, Enum, command-only Enum, DateTime now', async () => {
      const res = await createProduct({});
      expect(res.status).to.equal(201);
      const p = res.body as Rec;
      expect(p).to.include({
        weightKg: 0.5,
        active: true,
        tier: 'basic',
        lifecycle: 'draft',
        attributes: null,
        launchDate: null,
      });
      expect(p.updatedAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    });

    it('round-trips every type in its JSON form', async () => {
      const body = {
        description: 'long text',
        contact: 'sales@example.com',
        weightKg: 1.25,
        active: false,
        launchDate: '2024-02-29',
        updatedAt: '2024-03-01T10:00:00+02:00',
        attributes: { colors: ['red', 'blue'], size: { w: 1, h: 2 }, note: null },
        tier: 'pro',
        // A file field takes an upload (test/uploads.test.ts); in JSON, null only.
        manual: null,
      };
      const res = await createProduct(body);
      expect(res.status).to.equal(201);
      const p = res.body as Rec;
      expect(p).to.deep.include({ ...body, updatedAt: '2024-03-01T08:00:00.000Z' });
      expect((await call('GET', '/api/products/{id}', `/api/products/${p.id}`)).body).to.deep.equal(p);
    });

    const invalid: Array<[string, unknown]> = [
      ['priceCents', 19.99],
      ['priceCents', '1999'],
      ['priceCents', 2 ** 53],
      ['weightKg', 'heavy'],
      ['active', 'true'],
      ['active', 1],
      ['launchDate', '2023-02-29'],
      ['launchDate', '2024-13-01'],
      ['launchDate', '2024-1-1'],
      ['updatedAt', '2024-03-01T10:00:00'],
      ['updatedAt', 'yesterday'],
      ['tier', 'enterprise'],
      ['contact', 'a@b'],
      ['categoryId', '01J00000000000000000000000'],
    ];
    for (const [field, value] of invalid) {
      it(`refuses ${field} = ${JSON.stringify(value)}`, async () => {
        const res = await createProduct({ [field]: value });
        expect(res.status).to.equal(400);
        expect(fieldErrors(res)).to.deep.equal([`${field}:INVALID_TYPE`]);
      });
    }

    it('refuses a name in a file field: only an upload points a record at a file', async () => {
      const res = await createProduct({ manual: '/uploads/manual.pdf' });
      expect(res.status).to.equal(400);
      expect(fieldErrors(res)).to.deep.equal(['manual:NOT_AN_UPLOAD']);
    });

    it('uses UUID keys where declared and resolves Refs written without a field (self-reference too)', async () => {
      const parent = (await call('POST', '/api/categorys', '/api/categorys', { slug: 'home', title: 'Home' }))
        .body as Rec;
      expect(parent.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const child = await call('POST', '/api/categorys', '/api/categorys', {
        slug: 'lamps',
        title: 'Lamps',
        parentId: parent.id,
      });
      expect(child.status).to.equal(201);
      const product = (await createProduct({ categoryId: parent.id })).body as Rec;
      const movement = await call('POST', '/api/stockmovements', '/api/stockmovements', {
        productId: product.id,
        quantity: -3,
      });
      expect(movement.status).to.equal(201);
      expect(movement.body).to.include({ productId: product.id, quantity: -3, note: null });
      const dangling = await call('POST', '/api/stockmovements', '/api/stockmovements', {
        productId: '01J00000000000000000000000',
        quantity: 1,
      });
      expect(dangling.status).to.equal(422);
    });

    it('keeps command-only fields out of create and update', async () => {
      const refused = await createProduct({ lifecycle: 'listed' });
      expect(refused.status).to.equal(403);
      const p = (await createProduct({})).body as Rec;
      const res = await call('PUT', '/api/products/{id}', `/api/products/${p.id}`, { lifecycle: 'retired' });
      expect(res.status).to.equal(403);
      expect(((await call('GET', '/api/products/{id}', `/api/products/${p.id}`)).body as Rec).lifecycle).to.equal(
        'draft',
      );
    });

    describe('access rules', () => {
      const code = (res: HttpResponse) => (res.body as ErrorBody).error.code;
      let active: Record<string, unknown>;
      let inactive: Record<string, unknown>;
      before(async () => {
        active = (await createProduct({ contact: 'lamps@example.com' })).body as Record<string, unknown>;
        inactive = (await createProduct({ active: false })).body as Record<string, unknown>;
      });

      it('lets anyone read a public entity, and nobody anonymous write it', async () => {
        expect((await call('GET', '/api/categorys', '/api/categorys', undefined, null)).status).to.equal(200);
        const res = await call('POST', '/api/categorys', '/api/categorys', { slug: 'anon', title: 'Anon' }, null);
        expect(res.status).to.equal(401);
        expect(code(res)).to.equal('UNAUTHENTICATED');
      });

      it('fails closed for anonymous callers where a rule reads the actor', async () => {
        const res = await call('GET', '/api/products', '/api/products', undefined, null);
        expect(res.status).to.equal(401);
        expect(res.headers.get('www-authenticate')).to.equal(null);
      });

      it('refuses unknown and malformed credentials with 401, even on public routes', async () => {
        for (const authorization of [
          'Bearer not-a-configured-key-123456',
          'Basic dXNlcjpwYXNz',
          'Bearer',
          `bearer  ${KEYS.CATALOG_OPS_KEY} x`,
        ]) {
          const res = await request(app.url, 'GET', '/api/categorys', { headers: { authorization } });
          expect(res.status, authorization).to.equal(401);
          expect(code(res)).to.equal('UNAUTHENTICATED');
          expect(res.headers.get('www-authenticate')).to.equal('Bearer');
        }
      });

      it('filters rows in the query: a viewer lists and gets active products only', async () => {
        const ids = async (key: string) => {
          const seen: string[] = [];
          for (let offset = 0; ; offset += 1000) {
            const page = (
              await call('GET', '/api/products', `/api/products?limit=1000&offset=${offset}`, undefined, key)
            ).body as { items: Array<Record<string, unknown>>; hasMore: boolean };
            seen.push(...page.items.map((p) => p.id as string));
            if (!page.hasMore) break;
          }
          return seen;
        };
        const asViewer = await ids(KEYS.CATALOG_READER_KEY);
        const asAdmin = await ids(KEYS.CATALOG_OPS_KEY);
        expect(asViewer).to.include(active.id);
        expect(asViewer).not.to.include(inactive.id);
        expect(asAdmin).to.include.members([active.id, inactive.id]);
        expect((await call('GET', '/api/products', '/api/products?limit=1', undefined, KEYS.CATALOG_READER_KEY)).body)
          .to.have.property('items')
          .with.length(1);
        const hidden = await call(
          'GET',
          '/api/products/{id}',
          `/api/products/${inactive.id}`,
          undefined,
          KEYS.CATALOG_READER_KEY,
        );
        expect(hidden.status).to.equal(404);
        expect(code(hidden)).to.equal('NOT_FOUND');
      });

      it('hides fields the actor may not read', async () => {
        const asViewer = (
          await call('GET', '/api/products/{id}', `/api/products/${active.id}`, undefined, KEYS.CATALOG_READER_KEY)
        ).body as Record<string, unknown>;
        expect(asViewer).not.to.have.property('contact');
        const asAdmin = (await call('GET', '/api/products/{id}', `/api/products/${active.id}`)).body as Record<
          string,
          unknown
        >;
        expect(asAdmin.contact).to.equal('lamps@example.com');
      });

      it('requires the entity scopes of an API key', async () => {
        const res = await call(
          'POST',
          '/api/products',
          '/api/products',
          { sku: 'scoped', name: 'x', priceCents: 1 },
          KEYS.CATALOG_READER_KEY,
        );
        expect(res.status).to.equal(403);
        expect(code(res)).to.equal('INSUFFICIENT_SCOPE');
      });

      it('checks update rules, and field write rules, writing nothing when refused', async () => {
        const renamed = await call(
          'PUT',
          '/api/products/{id}',
          `/api/products/${active.id}`,
          { name: 'Desk lamp' },
          KEYS.CATALOG_EDITOR_KEY,
        );
        expect(renamed.status).to.equal(200);
        const priced = await call(
          'PUT',
          '/api/products/{id}',
          `/api/products/${active.id}`,
          { name: 'Cheap lamp', priceCents: 1 },
          KEYS.CATALOG_EDITOR_KEY,
        );
        expect(priced.status).to.equal(403);
        expect((priced.body as ErrorBody).error.details?.[0]).to.include({
          field: 'priceCents',
          code: 'FIELD_WRITE_DENIED',
        });
        const stored = (await call('GET', '/api/products/{id}', `/api/products/${active.id}`)).body as Record<
          string,
          unknown
        >;
        expect(stored).to.include({ name: 'Desk lamp', priceCents: 1999 });
        const created = await call(
          'POST',
          '/api/products',
          '/api/products',
          { sku: 'by-editor', name: 'x', priceCents: 1 },
          KEYS.CATALOG_EDITOR_KEY,
        );
        expect(created.status).to.equal(403);
        expect(code(created)).to.equal('FORBIDDEN');
        const deleted = await call(
          'DELETE',
          '/api/products/{id}',
          `/api/products/${active.id}`,
          undefined,
          KEYS.CATALOG_EDITOR_KEY,
        );
        expect(deleted.status).to.equal(403);
      });
    });

    // The tracing core is the app's, not the database's: it runs once, in-process on SQLite, with a
    // trace store of its own (round-trips.test.ts and postgres-driver.test.ts read PostgreSQL's spans).
    if (database === 'sqlite')
      describe('tracing core (in-process)', () => {
        let inProcess: InProcessApp;
        let traces: InProcessApp['traces'];
        let base: string;

        before(async () => {
          inProcess = await bootInProcess(appDir, KEYS, { dbName: 'traced.db', traces: { max: 3, maxAgeMs: 60_000 } });
          traces = inProcess.traces;
          base = inProcess.url;
        });
        after(() => inProcess?.close());

        it('records the http request, route matching and each database query as spans', async () => {
          const created = await request(base, 'POST', '/api/stockmovements', {
            json: { productId: '01J00000000000000000000000', quantity: 1 },
            headers: { authorization: `Bearer ${KEYS.CATALOG_OPS_KEY}`, 'idempotency-key': freshKey() },
          });
          const trace = traces.list(1)[0];
          expect(trace.traceId).to.equal(created.headers.get('x-trace-id'));
          expect(trace.metadata).to.include({
            method: 'POST',
            path: '/api/stockmovements',
            statusCode: 422,
            route: 'StockMovement.create',
          });
          const names = trace.spans.map((s) => s.name);
          expect(names.slice(0, 3)).to.deep.equal(['http.request', 'auth.check', 'route.match']);
          const queries = trace.spans.filter((s) => s.name === 'database.query');
          expect(queries.map((q) => q.attributes?.sql)).to.include('SELECT 1 FROM "Product" WHERE "id" = ?');
          const [root, auth, routing] = trace.spans;
          for (const child of [auth, routing, ...queries]) expect(child.parentId).to.equal(root.id);
          expect(auth.attributes).to.deep.equal({ actor: 'agent' });
          for (const q of queries) expect(q.type).to.equal('database');
          for (const s of trace.spans) expect(s.duration).to.be.at.least(0);
        });

        it('traces the front door and the Express forms of a route alike', async () => {
          const headers = { authorization: `Bearer ${KEYS.CATALOG_OPS_KEY}` };
          const shapes: unknown[] = [];
          for (const form of ['/api/products?limit=2', '/api/products/?limit=2']) {
            const res = await request(base, 'GET', form, { headers });
            expect(res.status).to.equal(200);
            const trace = traces.list(1)[0];
            expect(trace.traceId).to.equal(res.headers.get('x-trace-id'));
            expect(trace.metadata, form).to.include({
              method: 'GET',
              path: form.split('?')[0],
              statusCode: 200,
              route: 'Product.list',
            });
            const routing = trace.spans.find((s) => s.name === 'route.match');
            expect(routing?.attributes, form).to.deep.equal({ route: 'Product.list' });
            shapes.push(trace.spans.map((s) => [s.name, s.parentId]));
          }
          expect(shapes[1]).to.deep.equal(shapes[0]);
        });

        it('sets delegatedBy only through the trusted delegate hook of createApp', async () => {
          // A host that verified a human's approval out of band, here: a fixed id for the ops key.
          const delegate = (_req: unknown, actor: { id: string }) =>
            actor.id === 'agent-ops' ? 'human-42' : undefined;
          const delegated = await bootInProcess(appDir, KEYS, { dbName: 'traced.db', delegate });
          try {
            const url = delegated.url;
            const headers = { authorization: `Bearer ${KEYS.CATALOG_OPS_KEY}` };
            const category = await request(url, 'POST', '/api/categorys', {
              json: { slug: `d-${Date.now()}`, title: 'D' },
              headers: { ...headers, 'idempotency-key': freshKey(), 'x-delegated-by': 'forged' },
            });
            expect(category.status).to.equal(201);
            const id = (category.body as { id: string }).id;
            const trail = (await request(url, 'GET', `/api/audit?entity=Category&recordId=${id}`, { headers }))
              .body as { items: Array<{ delegatedBy: string | null; actorId: string }> };
            expect(trail.items.map((a) => [a.actorId, a.delegatedBy])).to.deep.equal([['agent-ops', 'human-42']]);
            const plain = (await request(base, 'GET', `/api/audit?entity=Category&recordId=${id}`, { headers }))
              .body as { items: Array<{ delegatedBy: string | null }> };
            expect(plain.items[0].delegatedBy).to.equal('human-42');
          } finally {
            await delegated.close();
          }
        });

        it('keeps only the newest traces up to its limit', async () => {
          for (let i = 0; i < 5; i++)
            await request(base, 'GET', `/api/products?limit=${i + 1}`, {
              headers: { authorization: `Bearer ${KEYS.CATALOG_OPS_KEY}` },
            });
          const kept = traces.list();
          expect(kept.length).to.equal(3);
          expect(kept.map((t) => t.metadata.path)).to.deep.equal(['/api/products', '/api/products', '/api/products']);
          expect(kept[0].spans.find((s) => s.name === 'database.query')?.attributes?.sql).to.match(
            /^SELECT .* FROM "Product" ORDER BY "id" LIMIT \? OFFSET \?$/,
          );
        });
      });
  });
