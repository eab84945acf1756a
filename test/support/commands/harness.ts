// Test support for commands, idempotency and audit: a generated app built in-process (like
// test/e2e-catalog.test.ts does) so a test can subscribe to its EventBus and look at its SQLite
// file (bootInProcess) or, on either database, through a connection of its own (bootOnDatabase),
// yet is still driven over real HTTP; sign-ins through the real users CLI; and small
// request helpers that check every response against the app's openapi.json.

import { spawnSync } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import type { AuditRecord } from '../../../runtime-lib/data/audit.ts';
import type { AppEvent } from '../../../runtime-lib/commands/events.ts';
import type { SqliteDatabase } from '../../../runtime-lib/data/sqlite.ts';
import type { Database as AnyDatabase } from '../../../runtime-lib/data/database.ts';
import { appRows, type AppRows } from '../database-rows.ts';

export type { AppEvent, AuditRecord };
import { request, type HttpResponse } from '../apps.ts';
import { OpenApiChecker } from '../openapi-check.ts';

export type Rec = Record<string, unknown>;

export interface ErrorBody {
  error: {
    code: string;
    message: string;
    retryable: boolean;
    details?: Array<{ field?: string; code: string; message: string }>;
    traceId: string;
  };
}

type Db = Database.Database;

export interface InProcessApp {
  url: string;
  appDir: string;
  /** Absolute path of the SQLite file the app uses. */
  dbFile: string;
  /** The app's own SQLite connection (that of the database it was built with). */
  db: Db;
  /** The database the app was built with (runtime/data/database.ts), for its runtime's own classes. */
  database: SqliteDatabase;
  /** Every event the app's EventBus delivered, in order. */
  delivered: AppEvent[];
  events: { subscribe(listener: (event: AppEvent) => void | Promise<void>): () => void };
  warnings: string[];
  /** The app's trace store. */
  traces: { list(limit?: number): TraceLike[] };
  /** Loads a module of the generated app (e.g. 'src/runtime/commands/executor.ts'). */
  load<T = Record<string, unknown>>(file: string): Promise<T>;
  close(): Promise<void>;
}

export interface TraceLike {
  traceId: string;
  metadata: Rec;
  spans: Array<{ id: number; parentId?: number; name: string; type: string; duration: number; attributes?: Rec }>;
}

export interface BootOptions {
  /** The SQLite file under data/ (default app.db). */
  dbName?: string;
  services?: Rec;
  /** The trace store's limits (default: the app's own, 1,000 traces and 5 minutes). */
  traces?: { max: number; maxAgeMs: number };
  /** createApp's trusted delegation hook. */
  delegate?: (req: unknown, actor: { id: string }) => string | undefined;
  /** openSqlite's options (e.g. a short busy timeout). */
  database?: { busyTimeoutMs?: number; synchronous?: string };
}

/** What the generated app's createApp returns, as these helpers use it. */
type BuiltApp = {
  listen(port: number, host: string): Server;
  events: InProcessApp['events'];
  traces: InProcessApp['traces'];
  close(): Promise<void>;
  /** Apps with [[plugins]]: settles once they are loaded (src/server.ts awaits it before serving). */
  ready?: Promise<void>;
};

/**
 * Serves a built app on a free port and collects every event its EventBus delivers; `close`
 * stops the server, then the app, then `release` (the database and whatever the caller opened).
 */
async function serve(built: BuiltApp, release: () => Promise<void>) {
  try {
    await built.ready;
  } catch (err) {
    await built.close();
    await release();
    throw err;
  }
  const delivered: AppEvent[] = [];
  built.events.subscribe((e) => void delivered.push(e));
  const server = built.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    delivered,
    events: built.events,
    traces: built.traces,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await built.close();
      await release();
    },
  };
}

/**
 * Builds the generated app in this process with `createApp({ db, appDir, env, ... })`, after
 * applying its migrations to `data/<dbName>`, and serves it on a free port.
 */
export async function bootInProcess(
  appDir: string,
  env: Record<string, string>,
  options: BootOptions = {},
): Promise<InProcessApp> {
  const dbName = options.dbName ?? 'app.db';
  const load = async <T>(file: string): Promise<T> => (await import(pathToFileURL(path.join(appDir, file)).href)) as T;
  const { createApp } = await load<{ createApp: (o: Rec) => BuiltApp }>('src/app.ts');
  const { TraceStore } = await load<{ TraceStore: new (max: number, maxAgeMs: number) => unknown }>(
    'src/runtime/observe/tracing.ts',
  );
  const { openSqlite } = await load<{
    openSqlite: (url: string, base: string, o?: BootOptions['database']) => SqliteDatabase;
  }>('src/runtime/data/sqlite.ts');
  const { applyMigrations } = await load<{ applyMigrations: (db: Db, dir: string) => unknown }>(
    'src/runtime/data/migrate.ts',
  );
  const dbFile = path.join(appDir, 'data', dbName);
  const database = openSqlite(`file:${dbFile}`, appDir, options.database);
  const db = database.connection;
  applyMigrations(db, path.join(appDir, 'prisma', 'migrations'));
  const warnings: string[] = [];
  const traces = options.traces && new TraceStore(options.traces.max, options.traces.maxAgeMs);
  const built = createApp({
    db: database,
    appDir,
    env,
    services: options.services,
    traces,
    delegate: options.delegate,
    warn: (m: string) => warnings.push(m),
  });
  const served = await serve(built, () => database.close());
  return { ...served, appDir, dbFile, db, database, warnings, load };
}

/** A generated app built in this process on either database (bootOnDatabase). */
export interface AppOnDatabase {
  url: string;
  appDir: string;
  /** The app's DATABASE_URL, for the users CLI and the test's own connections. */
  databaseUrl: string;
  /** The database the app was built with, for its runtime's own classes. */
  database: AnyDatabase;
  /** A connection of the test's own: it sees only what the app has committed. */
  rows: AppRows;
  /** Every event the app's EventBus delivered, in order. */
  delivered: AppEvent[];
  events: InProcessApp['events'];
  traces: InProcessApp['traces'];
  /** What the app warned about while it was built (e.g. public entities). */
  warnings: string[];
  /** Loads a module of the generated app (e.g. 'src/runtime/commands/executor.ts'). */
  load<T = Record<string, unknown>>(file: string): Promise<T>;
  close(): Promise<void>;
}

/**
 * bootInProcess for suites that run once per database: the database of `databaseUrl` (a `file:`
 * URL or a postgres:// one) is opened and migrated as `npm start` does (the app's own
 * src/runtime/data/open.ts), then the app is built with createApp and served on a free port.
 */
export async function bootOnDatabase(
  appDir: string,
  databaseUrl: string,
  env: Record<string, string>,
  options: Pick<BootOptions, 'services' | 'delegate'> = {},
): Promise<AppOnDatabase> {
  const load = async <T>(file: string): Promise<T> => (await import(pathToFileURL(path.join(appDir, file)).href)) as T;
  const { openDatabase } = await load<{
    openDatabase: (dir: string, env: Record<string, string>) => Promise<{ db: AnyDatabase }>;
  }>('src/runtime/data/open.ts');
  const { createApp } = await load<{ createApp: (o: Rec) => BuiltApp }>('src/app.ts');
  const { db: database } = await openDatabase(appDir, { DATABASE_URL: databaseUrl });
  const warnings: string[] = [];
  let built: BuiltApp;
  try {
    const { services, delegate } = options;
    built = createApp({ db: database, appDir, env, services, delegate, warn: (m: string) => warnings.push(m) });
  } catch (err) {
    // A refusal to start (a missing secret, say) must not leave the pool open behind the test.
    await database.close();
    throw err;
  }
  const rows = await appRows(databaseUrl, appDir);
  const served = await serve(built, async () => {
    await rows.close();
    await database.close();
  });
  return { ...served, appDir, databaseUrl, database, rows, warnings, load };
}

/** Reads one row through a second connection: it sees only what has been committed. */
export function committedRow(dbFile: string, table: string, id: string): Rec | undefined {
  const other = new Database(dbFile, { readonly: true });
  try {
    return other.prepare(`SELECT * FROM "${table}" WHERE "id" = ?`).get(id) as Rec | undefined;
  } finally {
    other.close();
  }
}

/**
 * `npm run users -- ...` of the generated app, against the database of `databaseUrl`; `stdin` is
 * piped (the password of `add`).
 */
export function usersCli(
  appDir: string,
  databaseUrl: string,
  args: string[],
  stdin = '',
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/users.ts', ...args], {
    cwd: appDir,
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: databaseUrl },
    input: stdin,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export interface CallOptions {
  /** API key, or null for no Authorization header. */
  key?: string | null;
  /** Idempotency-Key header; omitted when undefined. */
  idem?: string;
  headers?: Record<string, string>;
  /** Raw body text (sent as application/json) instead of `json`. */
  raw?: string;
  /** Session to send (cookie and CSRF token). */
  session?: SessionClient;
}

/**
 * HTTP helpers bound to one app: each response is checked against openapi.json, carries an
 * X-Trace-ID, and an error is the envelope with that trace id and no stack frames.
 */
export class Api {
  readonly openapi: OpenApiChecker;

  constructor(
    readonly base: () => string,
    appDir: string,
    private readonly defaultKey: string | null,
  ) {
    this.openapi = new OpenApiChecker(path.join(appDir, 'openapi.json'));
  }

  async call(
    method: string,
    template: string,
    urlPath: string,
    json?: unknown,
    options: CallOptions = {},
  ): Promise<HttpResponse> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? (options.session ? null : this.defaultKey) : options.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (options.idem !== undefined) headers['idempotency-key'] = options.idem;
    if (options.session) Object.assign(headers, options.session.headers(method));
    const send =
      options.raw !== undefined
        ? { body: options.raw, headers: { 'content-type': 'application/json', ...headers } }
        : json === undefined
          ? { headers }
          : { json, headers };
    const res = await request(this.base(), method, urlPath, send);
    if (options.session) options.session.remember(res);
    this.openapi.check(method, template, res);
    expect(res.headers.get('x-trace-id'), 'X-Trace-ID').to.match(/^[0-9a-f]{32}$/);
    if (res.status >= 400) {
      expect((res.body as ErrorBody).error.traceId, 'envelope traceId').to.be.a('string');
      expect(res.text).not.to.match(/\bat .+\.ts:\d+/);
    }
    return res;
  }

  command(operationId: string, id: string, input?: unknown, options: CallOptions = {}): Promise<HttpResponse> {
    return this.call('POST', `/api/commands/${operationId}/{id}`, `/api/commands/${operationId}/${id}`, input, options);
  }

  async create(collection: string, body: Rec, options: CallOptions = {}): Promise<Rec> {
    const res = await this.call('POST', `/api/${collection}`, `/api/${collection}`, body, {
      idem: `create-${Math.random()}`,
      ...options,
    });
    expect(res.status, res.text).to.equal(201);
    return res.body as Rec;
  }

  async get(collection: string, id: string, options: CallOptions = {}): Promise<Rec> {
    const res = await this.call('GET', `/api/${collection}/{id}`, `/api/${collection}/${id}`, undefined, options);
    expect(res.status, res.text).to.equal(200);
    return res.body as Rec;
  }

  audit(entity: string, recordId: string, query = '', options: CallOptions = {}): Promise<HttpResponse> {
    const more = query ? `&${query}` : '';
    const q = `entity=${encodeURIComponent(entity)}&recordId=${encodeURIComponent(recordId)}${more}`;
    return this.call('GET', '/api/audit', `/api/audit?${q}`, undefined, options);
  }

  /** The whole trail of a record, newest first. */
  async trail(entity: string, recordId: string, options: CallOptions = {}): Promise<AuditRecord[]> {
    const res = await this.audit(entity, recordId, 'limit=1000', options);
    expect(res.status, res.text).to.equal(200);
    return (res.body as { items: AuditRecord[] }).items;
  }
}

/** A browser stand-in: the session cookie and the CSRF token from the JSON sign-in. */
export class SessionClient {
  private cookie = '';
  csrfToken = '';
  actor: Rec = {};
  /** Leave the CSRF token out (to check that sessions need it). */
  withoutCsrf = false;

  static async login(base: string, email: string, password: string): Promise<SessionClient> {
    const client = new SessionClient();
    const res = await request(base, 'POST', '/api/auth/login', { json: { email, password } });
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
    client.remember(res);
    const body = res.body as { actor: Rec; csrfToken: string };
    client.csrfToken = body.csrfToken;
    client.actor = body.actor;
    return client;
  }

  headers(method: string): Record<string, string> {
    const h: Record<string, string> = { cookie: this.cookie };
    if (method !== 'GET' && !this.withoutCsrf) h['x-csrf-token'] = this.csrfToken;
    return h;
  }

  remember(res: HttpResponse): void {
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0];
      if (pair.includes('.sid=')) this.cookie = pair;
    }
  }
}

export const errorOf = (res: HttpResponse): ErrorBody['error'] => (res.body as ErrorBody).error;

/** Runs `fn` with console.error captured (the app logs unexpected errors there with the trace id). */
export async function capturingConsoleError<T>(fn: () => Promise<T>): Promise<{ result: T; lines: string[] }> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
  try {
    return { result: await fn(), lines };
  } finally {
    console.error = original;
  }
}
