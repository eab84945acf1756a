// Unit tests of runtime-lib pieces whose edge cases are hard to reach over HTTP.

import { expect } from 'chai';
import Database from 'better-sqlite3';
import { mapSqliteError } from '../runtime-lib/data/sqlite.ts';
import { AppError, ERROR_CODES, envelope } from '../runtime-lib/core/errors.ts';
import { ulid, ULID_PATTERN } from '../runtime-lib/core/ids.ts';
import { ActiveTrace, TraceStore, type Trace } from '../runtime-lib/observe/tracing.ts';

describe('runtime-lib', () => {
  describe('ulid', () => {
    it('is a ULID that sorts in creation order, even within one millisecond', () => {
      const ids = Array.from({ length: 2000 }, () => ulid(1_700_000_000_000));
      for (const id of ids) expect(id).to.match(ULID_PATTERN);
      expect(new Set(ids).size).to.equal(ids.length);
      expect([...ids].sort()).to.deep.equal(ids);
      const later = ulid(1_700_000_000_001);
      expect(later > ids[ids.length - 1]).to.equal(true);
    });

    it('stays monotonic when the clock steps back', () => {
      const a = ulid(1_800_000_000_000);
      const b = ulid(1_799_999_999_000);
      expect(b > a).to.equal(true);
      expect(b.slice(0, 10)).to.equal(a.slice(0, 10));
    });
  });

  describe('TraceStore', () => {
    const trace = (startTime: number, path = '/'): Trace => ({
      traceId: Math.random().toString(16).slice(2),
      startTime,
      duration: 1,
      metadata: { method: 'GET', path, statusCode: 200 },
      spans: [],
    });

    it('keeps at most maxTraces, dropping the oldest, newest first', () => {
      const store = new TraceStore(3, 60_000);
      for (let i = 0; i < 5; i++) store.add(trace(Date.now(), `/${i}`));
      expect(store.list().map((t) => t.metadata.path)).to.deep.equal(['/4', '/3', '/2']);
      expect(store.list(1).map((t) => t.metadata.path)).to.deep.equal(['/4']);
    });

    it('forgets traces older than maxAgeMs', () => {
      const store = new TraceStore(10, 5 * 60_000);
      const old = trace(Date.now() - 6 * 60_000, '/old');
      store.add(old);
      store.add(trace(Date.now(), '/new'));
      expect(store.list().map((t) => t.metadata.path)).to.deep.equal(['/new']);
      expect(store.get(old.traceId)).to.equal(undefined);
    });

    it('closes spans left open when the trace finishes', () => {
      const active = new ActiveTrace();
      const root = active.startSpan('http.request', 'http');
      active.startSpan('database.query', 'database', { sql: 'SELECT 1' }, root.id);
      const done = active.finish({ method: 'GET', path: '/', statusCode: 200 });
      expect(done.traceId).to.match(/^[0-9a-f]{32}$/);
      for (const s of done.spans) expect(s.endTime).to.be.at.least(s.startTime);
      expect(done.spans[1].parentId).to.equal(done.spans[0].id);
    });
  });

  describe('errors', () => {
    it('marks retryable only the codes a retry can fix', () => {
      const retryable = Object.entries(ERROR_CODES)
        .filter(([, v]) => v.retryable)
        .map(([k]) => k);
      expect(retryable).to.deep.equal([
        'WEBHOOK_STEP_FAILED',
        'NOTIFICATION_FAILED',
        'JOB_INTERRUPTED',
        'IDEMPOTENCY_KEY_IN_PROGRESS',
        'TOO_MANY_ATTEMPTS',
        'DATABASE_BUSY',
        'STORAGE_UNAVAILABLE',
      ]);
    });

    it('renders the envelope of the format contract', () => {
      const err = new AppError('NOT_FOUND', 'Ticket "x" not found');
      expect(envelope(err, 'abc')).to.deep.equal({
        error: { code: 'NOT_FOUND', message: 'Ticket "x" not found', retryable: false, traceId: 'abc' },
      });
    });

    it('maps SQLite constraint failures to client errors', () => {
      const db = new Database(':memory:');
      db.pragma('foreign_keys = ON');
      db.exec(
        'CREATE TABLE a (id TEXT PRIMARY KEY, email TEXT UNIQUE); ' +
          'CREATE TABLE b (id TEXT PRIMARY KEY, aid TEXT NOT NULL REFERENCES a(id) ON DELETE RESTRICT)',
      );
      db.exec("INSERT INTO a VALUES ('1', 'x@y.z'); INSERT INTO b VALUES ('1', '1')");
      const fail = (sql: string) => {
        try {
          db.exec(sql);
        } catch (e) {
          return mapSqliteError(e) as AppError;
        }
        throw new Error('expected a failure');
      };
      expect(fail("INSERT INTO a VALUES ('2', 'x@y.z')")).to.include({ code: 'UNIQUE_CONFLICT' });
      expect(fail("INSERT INTO a VALUES ('2', 'x@y.z')").details).to.deep.equal([
        { field: 'email', code: 'UNIQUE', message: 'already taken' },
      ]);
      expect(fail("DELETE FROM a WHERE id = '1'")).to.include({ code: 'REFERENCE_CONFLICT' });
      expect(fail("INSERT INTO b VALUES ('2', 'missing')")).to.include({ code: 'REFERENCE_CONFLICT' });
      const syntax = fail('SELEC 1');
      expect(syntax).not.to.be.instanceOf(AppError);
    });
  });
});
