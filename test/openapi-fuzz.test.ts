// openapi.json is the contract: requests generated from the reference app's own document
// (fixtures/helpdesk), with fast-check and arbitraries made from its schemas, a fixed seed and a
// bounded number of requests, as an API key, a signed-in person, an anonymous caller and one with
// a key the app does not know. Each
// request is valid by the document, or breaks it in one way (a body value of the wrong type or
// pattern, a required key left out, an unknown key, a query value out of range, a malformed
// header, an API-key write without Idempotency-Key). The test fails on any 5xx, on an answer the
// document does not declare or whose body breaks its schema, on an invalid request that is
// accepted (2xx), and on a valid one refused as malformed (400: the document promised too
// little). Every failure is collected, so one run shows them all.

import * as path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import fc from 'fast-check';
import { isEmail } from '../runtime-lib/core/values.ts';
import {
  addUser,
  freshDir,
  freshKey,
  generate,
  login,
  request,
  ROOT,
  startApp,
  type RunningApp,
  type Session,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';
import { OpenApiChecker } from './support/openapi-check.ts';

type Schema = Record<string, unknown>;
type Rec = Record<string, unknown>;

const SEED = 20_261_126;
/** Requests per database: about 6 s of requests, 25 s with the app's start, on the reference machine. */
const RUNS = 1000;

const ENV = {
  TRIAGE_API_KEY: 'triage-key-0123456789abcdef',
  REPORTER_API_KEY: 'reporter-key-0123456789abcdef',
  SESSION_SECRET: 'fuzz-session-secret-0123456789abcdef0123',
  INBOUND_EMAIL_SECRET: 'inbound-email-secret-0123456789',
};

/** `badKey`: an Authorization header with no key of the app, which every route refuses (401). */
type Caller = 'apiKey' | 'session' | 'anonymous' | 'badKey';
interface Operation {
  method: string;
  template: string;
  parameters: Array<{ name: string; in: string; required?: boolean; schema: Schema }>;
  body?: { required: boolean; schema: Schema };
}
interface Generated {
  op: Operation;
  caller: Caller;
  /** Undefined: valid by the document; otherwise what breaks it. */
  breaks?: string;
  path: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
}

// Operations whose requests would end the run's own credentials, or that need a signature
// (webhooks: test/webhooks.test.ts) are left out.
// GET /uploads/{name} is test/uploads.test.ts's: its name is a stored file's, which the path
// arbitraries (drawn from known record ids) never make, and sampling stalled on it.
const SKIPPED = new Set(['POST /api/auth/logout', 'POST /webhooks/inbound-email', 'GET /uploads/{name}']);

const ULID_CHARS = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

for (const database of DATABASES)
  describe(`openapi.json as the contract: schema-driven requests (helpdesk, ${database})`, function () {
    this.timeout(180_000);
    let app: RunningApp;
    let api: OpenApiChecker;
    let session: Session;
    let doc: { paths: Record<string, Record<string, Rec>>; components: { schemas: Record<string, Schema> } };
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    ajv.addFormat('idn-email', isEmail);
    const validators = new Map<Schema, ValidateFunction>();
    const valid = (schema: Schema, value: unknown): boolean => {
      let v = validators.get(schema);
      if (!v) validators.set(schema, (v = ajv.compile(schema)));
      return v(value) as boolean;
    };
    /** Ids of records that exist, so that generated requests reach records and not only 404s. */
    const known: string[] = [];

    before(async () => {
      const appDir = path.join(freshDir(`openapi-fuzz-${database}`), 'app');
      const env = { ...ENV, DATABASE_URL: await databaseUrl(database, 'fuzz') };
      const r = await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      expect(r.status, r.stderr).to.equal(0);
      api = new OpenApiChecker(path.join(appDir, 'openapi.json'));
      doc = api.doc as unknown as typeof doc;
      app = await startApp(appDir, env);
      addUser(appDir, env, 'admin@example.com', 'correct horse battery', ['admin']);
      session = await login(app.url, 'admin@example.com', 'correct horse battery');
      const triage = { authorization: `Bearer ${ENV.TRIAGE_API_KEY}` };
      const post = async (url: string, json: unknown) => {
        const res = await request(app.url, 'POST', url, {
          json,
          headers: { ...triage, 'idempotency-key': freshKey() },
        });
        expect(res.status, res.text).to.equal(201);
        return (res.body as Rec).id as string;
      };
      for (let i = 0; i < 3; i++) {
        const customerId = await post('/api/customers', { name: `Customer ${i}`, email: `c${i}@example.com` });
        const ticketId = await post('/api/tickets', { title: `Ticket ${i}`, customerId });
        const commentId = await post('/api/comments', { ticketId, authorId: 'fuzz', body: 'A comment' });
        known.push(customerId, ticketId, commentId);
      }
    });
    after(async () => app?.stop());

    /** The schema with its references replaced by their targets (the document has no cycles). */
    const deref = (schema: unknown): Schema => {
      const walk = (value: unknown): unknown => {
        if (Array.isArray(value)) return value.map(walk);
        if (typeof value !== 'object' || value === null) return value;
        const target = (value as Rec).$ref;
        if (typeof target === 'string') return walk(doc.components.schemas[target.split('/').pop() as string]);
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
      };
      return walk(schema) as Schema;
    };

    function operations(): Operation[] {
      const ops: Operation[] = [];
      for (const [template, item] of Object.entries(doc.paths)) {
        for (const [method, raw] of Object.entries(item)) {
          if (method === 'parameters' || SKIPPED.has(`${method.toUpperCase()} ${template}`)) continue;
          const op = raw as {
            parameters?: Operation['parameters'];
            requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
          };
          const parameters = [
            ...((item.parameters as unknown as Operation['parameters'] | undefined) ?? []),
            ...(op.parameters ?? []),
          ].map((p) => ({ ...p, schema: deref(p.schema) }));
          const json = op.requestBody?.content['application/json'];
          ops.push({
            method: method.toUpperCase(),
            template,
            parameters,
            ...(json ? { body: { required: op.requestBody?.required === true, schema: deref(json.schema) } } : {}),
          });
        }
      }
      return ops;
    }

    /** Values the schema takes (checked against it: an arbitrary may propose a few it does not). */
    function arb(schema: Schema): fc.Arbitrary<unknown> {
      return raw(schema).filter((v) => valid(schema, v));
    }

    function raw(schema: Schema): fc.Arbitrary<unknown> {
      if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
      if ('const' in schema) return fc.constant(schema.const);
      if (Array.isArray(schema.oneOf)) return fc.oneof(...(schema.oneOf as Schema[]).map((s) => raw(s)));
      const types = Array.isArray(schema.type)
        ? (schema.type as string[])
        : typeof schema.type === 'string'
          ? [schema.type]
          : [];
      if (types.length > 1) return fc.oneof(...types.map((type) => raw({ ...schema, type })));
      switch (types[0]) {
        case 'null':
          return fc.constant(null);
        case 'boolean':
          return fc.boolean();
        case 'integer': {
          const min = (schema.minimum as number | undefined) ?? -1_000_000;
          const max = (schema.maximum as number | undefined) ?? 1_000_000;
          return fc.oneof(
            fc.constantFrom(min, max),
            fc.integer({ min: Math.max(min, -1_000_000), max: Math.min(max, 1_000_000) }),
          );
        }
        case 'number':
          return fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e9, max: 1e9 });
        case 'string':
          return stringArb(schema);
        case 'array':
          return fc.array(raw((schema.items as Schema | undefined) ?? {}), { maxLength: 3 });
        case 'object':
          return objectArb(schema);
        default:
          return fc.jsonValue({ maxDepth: 2 });
      }
    }

    function stringArb(schema: Schema): fc.Arbitrary<string> {
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'date-time')
        return fc
          .date({ min: new Date('1990-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString());
      if (schema.format === 'date')
        return fc
          .date({ min: new Date('1990-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString().slice(0, 10));
      if (schema.format === 'idn-email') {
        const word = fc.string({
          unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'),
          minLength: 1,
          maxLength: 10,
        });
        return fc.tuple(word, word, fc.constantFrom('com', 'de', 'example')).map(([a, b, tld]) => `${a}@${b}.${tld}`);
      }
      if (schema.format === 'uri-reference') return fc.constantFrom('files/a.pdf', 'b.png', '/uploads/c.pdf');
      if (schema.pattern === '^[0-7][0-9A-HJKMNP-TV-Z]{25}$') {
        return fc
          .tuple(
            fc.constantFrom(...'01234567'),
            fc.string({ unit: fc.constantFrom(...ULID_CHARS), minLength: 25, maxLength: 25 }),
          )
          .map(([a, b]) => a + b);
      }
      const minLength = (schema.minLength as number | undefined) ?? 0;
      const maxLength = Math.min((schema.maxLength as number | undefined) ?? 40, 40);
      return fc.oneof(
        fc.string({ minLength, maxLength }),
        fc.string({ unit: 'grapheme', minLength, maxLength }),
        fc.constantFrom(...known),
      );
    }

    function objectArb(schema: Schema): fc.Arbitrary<Rec> {
      const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
      const required = (schema.required as string[] | undefined) ?? [];
      return fc.record(Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, arb(s)])), {
        requiredKeys: required.filter((k) => k in properties),
      }) as fc.Arbitrary<Rec>;
    }

    /** A value the schema does not take, when one of these kinds is not taken: else undefined. */
    function invalidValues(schema: Schema): unknown[] {
      const candidates: unknown[] = [
        12_345,
        'not-a-number',
        true,
        null,
        [],
        {},
        '',
        '   ',
        'line\u0001break',
        '0@com',
        -1,
        0,
        1001,
        2 ** 53,
        'x'.repeat(300),
      ];
      return candidates.filter((c) => !valid(schema, c));
    }

    function valueText(value: unknown): string {
      return typeof value === 'string' ? value : JSON.stringify(value);
    }

    const signsIn = (op: Operation) =>
      op.method === 'POST' && ['/api/auth/login', '/api/auth/signup'].includes(op.template);

    /** A request valid by the document, or one that breaks it in one way. */
    function requestArb(op: Operation): fc.Arbitrary<Generated> {
      const writes = op.parameters.some((p) => p.name === 'Idempotency-Key');
      const pathParams = op.parameters.filter((p) => p.in === 'path');
      const queryParams = op.parameters.filter((p) => p.in === 'query');
      // Signing in or up again would end the run's own session: those go without it.
      const callers: Caller[] =
        op.template.startsWith('/api/auth/') && op.method === 'POST'
          ? ['apiKey', 'anonymous', 'badKey']
          : ['apiKey', 'apiKey', 'session', 'session', 'anonymous', 'badKey'];
      // A path segment is never empty: a URL cannot carry an empty parameter.
      const segment = (schema: Schema) =>
        fc.oneof(
          fc.constantFrom(...known).filter((id) => valid(schema, id)),
          arb(schema)
            .map(valueText)
            .filter((t) => t !== ''),
        );
      const base = fc.record({
        caller: fc.constantFrom(...callers),
        path: fc.record(Object.fromEntries(pathParams.map((p) => [p.name, segment(p.schema)]))),
        query: fc.record(Object.fromEntries(queryParams.map((p) => [p.name, arb(p.schema).map(valueText)])), {
          requiredKeys: queryParams.filter((p) => p.required).map((p) => p.name),
        }),
        runId: fc.option(fc.string({ unit: fc.constantFrom(...'abcdef0123456789-'), minLength: 1, maxLength: 20 }), {
          nil: undefined,
        }),
        body: op.body ? arb(op.body.schema) : fc.constant(undefined),
        breakage: fc.nat(),
        which: fc.nat(),
      });
      return base.map(({ caller, path: params, query, runId, body, breakage, which }) => {
        const headers: Record<string, string> = {};
        if (runId !== undefined && writes) headers['x-agent-run-id'] = runId;
        if (writes) headers['idempotency-key'] = freshKey();
        const request: Generated = {
          op,
          caller,
          path: params as Record<string, string>,
          query: query as Record<string, string>,
          headers,
          body,
        };
        // One in two requests breaks the document, when this operation has something to break.
        const breakers = breakersOf(op, request, which);
        if (breakage % 2 === 1 && breakers.length) breakers[breakage % breakers.length]();
        // Sign-in and sign-up say they take no Authorization header: with an API key they are invalid.
        if (caller === 'apiKey' && signsIn(op)) request.breaks ??= 'an API key on sign-in (SESSION_WITH_API_KEY)';
        return request;
      });
    }

    /** The ways this request can be made invalid: each sets `breaks` and changes one thing. */
    function breakersOf(op: Operation, r: Generated, which: number): Array<() => void> {
      const out: Array<() => void> = [];
      const pick = <T>(list: readonly T[]): T => list[which % list.length];
      const bodySchema = op.body?.schema;
      if (bodySchema && typeof r.body === 'object' && r.body !== null && !Array.isArray(r.body)) {
        const body = r.body as Rec;
        const properties = Object.entries((bodySchema.properties as Record<string, Schema> | undefined) ?? {});
        const typed = properties.filter(([, s]) => invalidValues(s).length > 0);
        if (typed.length) {
          out.push(() => {
            const [name, schema] = pick(typed);
            const value = pick(invalidValues(schema));
            r.body = { ...body, [name]: value };
            r.breaks = `body.${name} = ${JSON.stringify(value)}`;
          });
        }
        const required = (bodySchema.required as string[] | undefined) ?? [];
        if (required.length) {
          out.push(() => {
            const name = pick(required);
            const { [name]: _, ...rest } = body;
            r.body = rest;
            r.breaks = `body without required ${name}`;
          });
        }
        if (bodySchema.additionalProperties === false) {
          out.push(() => {
            r.body = { ...body, zzUnknownKey: 1 };
            r.breaks = 'body with an unknown key';
          });
        }
        if (op.body?.required) {
          out.push(() => {
            r.body = pick([[1, 2], 'text', 42]);
            r.breaks = `body ${JSON.stringify(r.body)}`;
          });
        }
      }
      const queryParams = op.parameters.filter((p) => p.in === 'query' && invalidValues(p.schema).length > 0);
      if (queryParams.length) {
        out.push(() => {
          const p = pick(queryParams);
          const value = pick(invalidValues(p.schema).filter((v) => typeof v !== 'object' || v === null));
          if (value === undefined || (value === null && p.schema.type !== 'string')) return;
          r.query = { ...r.query, [p.name]: valueText(value) };
          // A query string carries text: "null" or "true" may be a valid value of a text parameter.
          if (valid(p.schema, valueText(value))) return;
          r.breaks = `query ${p.name}=${valueText(value)}`;
        });
      }
      if ('idempotency-key' in r.headers) {
        out.push(() => {
          r.headers['x-agent-run-id'] = 'run id with spaces';
          r.breaks = 'X-Agent-Run-ID with spaces';
        });
        out.push(() => {
          r.headers['idempotency-key'] = 'key with spaces';
          r.breaks = 'Idempotency-Key with spaces';
        });
        if (r.caller === 'apiKey') {
          out.push(() => {
            delete r.headers['idempotency-key'];
            r.breaks = 'API-key write without Idempotency-Key';
          });
        }
      }
      return out;
    }

    function urlOf(r: Generated): string {
      let url = r.op.template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(r.path[name] ?? ''));
      const query = new URLSearchParams(r.query).toString();
      if (query) url += `?${query}`;
      return url;
    }

    function credentials(caller: Caller): Record<string, string> {
      if (caller === 'apiKey') return { authorization: `Bearer ${ENV.TRIAGE_API_KEY}` };
      if (caller === 'session') return { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
      if (caller === 'badKey') return { authorization: 'Bearer not-a-key-of-this-app-0123456789' };
      return {};
    }

    it(
      `answers ${RUNS} generated requests (fixed seed) as documented: ` +
        'no 5xx, declared statuses and bodies, invalid ones refused',
      async () => {
        const ops = operations();
        const all = fc.integer({ min: 0, max: ops.length - 1 }).chain((i) => requestArb(ops[i]));
        const requests = fc.sample(all, { seed: SEED, numRuns: RUNS });
        // One line per kind of problem (operation, caller, breakage, problem), with the first URL that showed it.
        const failures = new Map<string, string>();
        const fail = (r: Generated, url: string, problem: string) => {
          const kind =
            `${r.op.method} ${r.op.template} as ${r.caller}${r.breaks ? ` (${r.breaks})` : ''}: ` +
            `${problem.slice(0, 60)}`;
          if (!failures.has(kind))
            failures.set(kind, `${r.op.method} ${url} as ${r.caller}${r.breaks ? ` (${r.breaks})` : ''}: ${problem}`);
        };
        let invalid = 0;
        for (const r of requests) {
          const url = urlOf(r);
          const sent = {
            headers: { ...credentials(r.caller), ...r.headers },
            ...(r.body !== undefined ? { json: r.body } : {}),
          };
          const res = await request(app.url, r.op.method, url, sent);
          if (r.breaks) invalid++;
          // The trace id differs from one answer to the next.
          const text = res.text.replace(/"traceId":"[0-9a-f]*"/g, '"traceId":"…"');
          if (res.status >= 500) fail(r, url, `${res.status} ${text.slice(0, 200)}`);
          else if (r.breaks && res.status < 300) fail(r, url, `invalid, yet accepted with ${res.status}`);
          // The document promises less than the app checks: a request it calls valid is refused as malformed.
          else if (!r.breaks && res.status === 400)
            fail(r, url, `valid by openapi.json, yet refused: ${text.slice(0, 200)}`);
          try {
            api.check(r.op.method, r.op.template, res);
          } catch (err) {
            fail(r, url, (err as Error).message.split('\n')[0].replace(res.text, text).slice(0, 300));
          }
        }
        expect([...failures.values()], `${failures.size} kinds of problem in ${RUNS} requests`).to.deep.equal([]);
        // Both kinds were sent, in fair numbers.
        expect(invalid).to.be.within(RUNS / 4, (RUNS * 3) / 4);
      },
    );

    it('answers a method a path does not serve with 405 and Allow, not 404', async () => {
      const cases: Array<[string, string, string]> = [
        ['PATCH', `/api/tickets/${known[1]}`, 'GET, HEAD, PUT, DELETE'],
        ['DELETE', '/api/tickets', 'GET, HEAD, POST'],
        ['GET', '/api/auth/login', 'POST'],
        ['PUT', '/api/skills/triage/tickets', 'GET, HEAD'],
        ['DELETE', '/api/jobs/some-job', 'GET, HEAD'],
      ];
      for (const [method, url, allow] of cases) {
        const res = await request(app.url, method, url, { headers: credentials('apiKey') });
        expect(res.status, `${method} ${url}: ${res.text}`).to.equal(405);
        expect(res.headers.get('allow'), `${method} ${url}`).to.equal(allow);
        expect((res.body as { error: Rec }).error).to.include({ code: 'METHOD_NOT_ALLOWED' });
      }
      const nowhere = await request(app.url, 'GET', '/api/nothing-here', { headers: credentials('apiKey') });
      expect(nowhere.status).to.equal(404);
      expect((nowhere.body as { error: Rec }).error).to.include({ code: 'ROUTE_NOT_FOUND' });
    });
  });
