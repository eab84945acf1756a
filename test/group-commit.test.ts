// Group commit (runtime-lib/group-commit.ts) on a real SQLite file: writes of one event-loop turn
// share a transaction, fail alone, and are answered only once committed.

import * as path from 'node:path';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { atomically, openDatabase, query, type Db, withSavepoint } from '../runtime-lib/data/db.ts';
import { AppError } from '../runtime-lib/core/errors.ts';
import { GroupCommit, groupCommit } from '../runtime-lib/data/group-commit.ts';
import { ActiveTrace } from '../runtime-lib/observe/tracing.ts';
import { freshDir } from './support/apps.ts';

describe('group commit', () => {
  let file: string;
  let db: Db;
  /** A second connection: it sees only what has committed. */
  let observer: Database.Database;
  let commits: GroupCommit;

  const insert = (name: string) => () => db.prepare('INSERT INTO "item" ("name") VALUES (?)').run(name).lastInsertRowid;
  const committed = () => observer.prepare('SELECT "name" FROM "item" ORDER BY "name"').pluck().all();
  const settle = <T>(p: Promise<T>) => p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));

  beforeEach(() => {
    file = path.join(freshDir('group-commit'), 'app.db');
    db = openDatabase(`file:${file}`, '/');
    db.exec('CREATE TABLE "item" ("name" TEXT NOT NULL UNIQUE)');
    db.exec('CREATE TABLE "parent" ("id" INTEGER PRIMARY KEY)');
    db.exec('CREATE TABLE "child" ("parentId" INTEGER REFERENCES "parent" ("id") DEFERRABLE INITIALLY DEFERRED)');
    observer = new Database(file, { readonly: true });
    commits = groupCommit(db);
  });

  afterEach(() => {
    observer.close();
    db.close();
  });

  it('commits the writes of one turn in one transaction and answers only after the commit', async () => {
    const traces = [new ActiveTrace(), new ActiveTrace(), new ActiveTrace()];
    const seenAtAnswer: unknown[][] = [];
    const answers = ['a', 'b', 'c'].map((name, i) => commits.run(insert(name), traces[i]).then((rowid) => (seenAtAnswer.push(committed()), rowid)));
    // Nothing runs, let alone commits, before the turn ends.
    expect(committed()).to.deep.equal([]);
    expect(await Promise.all(answers)).to.deep.equal([1, 2, 3]);
    for (const seen of seenAtAnswer) expect(seen).to.deep.equal(['a', 'b', 'c']);
    for (const trace of traces) {
      const commit = trace.spans.find((s) => s.name === 'database.commit');
      expect(commit?.attributes).to.deep.equal({ writes: 3 });
      expect(commit?.endTime).to.be.greaterThan(0);
    }
    expect(db.inTransaction).to.equal(false);
  });

  it('lets each write see the writes queued before it', async () => {
    const count = () => db.prepare('SELECT count(*) FROM "item"').pluck().get();
    const seen = await Promise.all([commits.run(insert('a')), commits.run(count), commits.run(insert('b')), commits.run(count)]);
    expect([seen[1], seen[3]]).to.deep.equal([1, 2]);
  });

  it('rolls a failing write back alone: the others of its group commit', async () => {
    const results = await Promise.all([
      settle(commits.run(insert('a'))),
      settle(
        commits.run(() => {
          insert('half-done')();
          throw new AppError('VALIDATION_FAILED', 'refused after writing');
        }),
      ),
      // A constraint failure reaches its caller as the app's error.
      settle(commits.run(insert('a'))),
      settle(commits.run(insert('b'))),
    ]);
    expect(results.map((r) => r.ok)).to.deep.equal([true, false, false, true]);
    expect((results[1] as { error: AppError }).error.code).to.equal('VALIDATION_FAILED');
    expect((results[2] as { error: AppError }).error.code).to.equal('UNIQUE_CONFLICT');
    expect(committed()).to.deep.equal(['a', 'b']);
  });

  it('fails every write of the group when the commit itself fails, and leaves nothing behind', async () => {
    // A deferred foreign key is checked at COMMIT: the group cannot commit.
    const results = await Promise.all([
      settle(commits.run(insert('a'))),
      settle(commits.run(() => db.prepare('INSERT INTO "child" ("parentId") VALUES (42)').run().changes)),
    ]);
    expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
    for (const r of results) expect(((r as { error: AppError }).error).code).to.equal('REFERENCE_CONFLICT');
    expect(committed()).to.deep.equal([]);
    expect(db.inTransaction).to.equal(false);
    // The connection is usable again.
    expect(await commits.run(insert('after'))).to.equal(1);
    expect(committed()).to.deep.equal(['after']);
  });

  it('splits a large turn into groups of at most 64 writes', async () => {
    const traces = Array.from({ length: 100 }, () => new ActiveTrace());
    await Promise.all(traces.map((trace, i) => commits.run(insert(`item-${String(i).padStart(3, '0')}`), trace)));
    const sizes = traces.map((t) => t.spans.find((s) => s.name === 'database.commit')?.attributes?.writes);
    expect(sizes.filter((n) => n === 64)).to.have.length(64);
    expect(sizes.filter((n) => n === 36)).to.have.length(36);
    expect(committed()).to.have.length(100);
  });

  it('refuses to run a group inside a transaction someone left open', async () => {
    db.exec('BEGIN');
    const result = await settle(commits.run(insert('a')));
    expect(result.ok).to.equal(false);
    expect(String((result as { error: Error }).error.message)).to.match(/left open/);
    db.exec('ROLLBACK');
  });

  describe('whatever a write throws, and wherever', () => {
    /** Every caller answered, nothing of a failed group committed, no transaction left open. */
    const usable = async () => {
      expect(db.inTransaction).to.equal(false);
      expect(await commits.run(insert('after'))).to.be.a('number');
      expect(committed()).to.include('after');
    };

    it('answers a write that throws null, undefined or a string with an Error; the others commit', async () => {
      const results = await Promise.all([
        settle(commits.run(insert('a'))),
        ...[null, undefined, 'a string'].map((thrown) =>
          settle(
            commits.run(() => {
              insert(`half-${String(thrown)}`)();
              throw thrown;
            }),
          ),
        ),
        settle(commits.run(insert('b'))),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([true, false, false, false, true]);
      for (const r of results.slice(1, 4)) {
        expect((r as { error: unknown }).error).to.be.instanceOf(Error);
        expect(String((r as { error: Error }).error.message)).to.match(/not an Error/);
      }
      expect(committed()).to.deep.equal(['a', 'b']);
      await usable();
    });

    it('fails the whole group, rolled back, when its RELEASE fails', async () => {
      const results = await Promise.all([
        settle(commits.run(insert('a'))),
        // Releasing the group's savepoint itself makes the group's own RELEASE fail (no such savepoint).
        settle(commits.run(() => (insert('released')(), db.exec('RELEASE bp_write'), 'done'))),
        settle(commits.run(insert('b'))),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([false, false, false]);
      expect(String((results[1] as { error: Error }).error.message)).to.match(/no such savepoint/);
      expect(committed()).to.deep.equal([]);
      await usable();
    });

    it('fails the whole group, rolled back, when its ROLLBACK TO fails', async () => {
      const results = await Promise.all([
        settle(commits.run(insert('a'))),
        settle(
          commits.run(() => {
            insert('released')();
            db.exec('RELEASE bp_write');
            throw new AppError('VALIDATION_FAILED', 'refused after releasing');
          }),
        ),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
      expect(committed()).to.deep.equal([]);
      await usable();
    });

    it('fails the group when even ROLLBACK fails, and rolls it back before the next group', async () => {
      // A statement left unfinished keeps the connection busy: RELEASE, ROLLBACK TO and ROLLBACK
      // all fail until it is closed.
      let open: IterableIterator<unknown> | undefined;
      try {
        const results = await Promise.all([
          settle(commits.run(insert('a'))),
          settle(
            commits.run(() => {
              insert('b')();
              open = db.prepare('SELECT "name" FROM "item"').iterate();
              open.next();
              return 'left a statement open';
            }),
          ),
        ]);
        expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
        expect(String((results[0] as { error: Error }).error.message)).to.match(/busy/);
        expect(committed()).to.deep.equal([]);
      } finally {
        open?.return?.();
      }
      // The failed ROLLBACK left the transaction open; the next group rolls it back first.
      expect(db.inTransaction).to.equal(true);
      expect(await commits.run(insert('after'))).to.be.a('number');
      expect(db.inTransaction).to.equal(false);
      expect(committed()).to.deep.equal(['after']);
    });

    it('fails the group when BEGIN fails (another connection holds the write lock)', async () => {
      db.pragma('busy_timeout = 20');
      const holder = new Database(file);
      holder.exec('BEGIN IMMEDIATE');
      try {
        const results = await Promise.all([settle(commits.run(insert('a'))), settle(commits.run(insert('b')))]);
        for (const r of results) expect((r as { error: AppError }).error.code).to.equal('DATABASE_BUSY');
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
      }
      await usable();
    });

    it('lets nothing of a write reach the database after its transaction ended inside it (disk full)', async () => {
      const stmt = db.prepare('INSERT INTO "item" ("name") VALUES (?)');
      const results = await Promise.all([
        settle(commits.run(insert('a'))),
        settle(
          commits.run(() => {
            // SQLITE_FULL rolls the whole transaction back; a write that carries on regardless
            // would otherwise run its next statements outside any transaction, each committing.
            db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
            try {
              query(undefined, stmt, 'run', ['x'.repeat(200_000)]);
            } catch {
              db.pragma('max_page_count = 1073741823');
              query(undefined, stmt, 'run', ['carried on']);
            }
            return 'carried on';
          }),
        ),
      ]);
      db.pragma('max_page_count = 1073741823');
      expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
      expect(committed()).to.deep.equal([]);
      await usable();
    });
  });

  describe('asynchronous writes', () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    beforeEach(() => {
      unhandled.length = 0;
      process.on('unhandledRejection', onUnhandled);
    });
    afterEach(() => void process.off('unhandledRejection', onUnhandled));
    const insertQuery = (name: string) => query(undefined, db.prepare('INSERT INTO "item" ("name") VALUES (?)'), 'run', [name]);
    const later = () => new Promise((resolve) => setTimeout(resolve, 50));

    it('are refused by type: a write returning a promise or a thenable does not compile', () => {
      // tsc --noEmit -p . checks these lines: an unused @ts-expect-error is itself an error.
      const refused = [
        // @ts-expect-error an async write
        () => commits.run(async () => 1),
        // @ts-expect-error a write returning a promise
        () => commits.run(() => Promise.resolve(1)),
        // @ts-expect-error a write returning a thenable
        () => commits.run((): PromiseLike<number> => Promise.resolve(1)),
      ];
      expect(refused).to.have.length(3);
    });

    it('rejects an async write, undoes it, handles its rejection, and keeps its later writes out', async () => {
      const results = await Promise.all([
        settle(commits.run(insert('a'))),
        settle(
          // @ts-expect-error an async write (as plain JavaScript or an `any` could still pass one)
          commits.run(async () => {
            insertQuery('before-await');
            await Promise.resolve();
            insertQuery('after-await');
          }),
        ),
        settle(
          // @ts-expect-error an async write that fails after its first await
          commits.run(async () => {
            await Promise.resolve();
            throw new Error('late failure');
          }),
        ),
        settle(commits.run(insert('b'))),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([true, false, false, true]);
      expect(String((results[1] as { error: Error }).error.message)).to.match(/must be synchronous/);
      // Let the stray continuations run, then look from another connection.
      await later();
      expect(committed()).to.deep.equal(['a', 'b']);
      expect(unhandled).to.deep.equal([]);
      await usable();
    });

    it('refuses a write returning a thenable, and what its then() writes later', async () => {
      const result = await settle(
        commits.run(() => {
          insertQuery('before-then');
          // then() runs later, when the promise machinery adopts the thenable.
          return { then: (resolve: (v: unknown) => void) => (insertQuery('in-then'), resolve(1)) } as unknown as number;
        }),
      );
      expect(result.ok).to.equal(false);
      await later();
      expect(committed()).to.deep.equal([]);
      expect(unhandled).to.deep.equal([]);
      await usable();
    });

    it('refuses whatever such stray code writes, however it tries, and still lets it read', async () => {
      let read: unknown;
      const tries: Array<{ ok: boolean }> = [];
      const attempt = (write: () => unknown) => {
        try {
          write();
          tries.push({ ok: true });
        } catch {
          tries.push({ ok: false });
        }
      };
      await settle(
        // @ts-expect-error an async write
        commits.run(async () => {
          await Promise.resolve();
          read = db.prepare('SELECT count(*) FROM "item"').pluck().get();
          attempt(() => insertQuery('by a statement'));
          // A transaction or a group-commit write of its own would commit half of an operation.
          attempt(() => atomically(db, () => insertQuery('by a transaction')));
          tries.push(await settle(commits.run(() => insertQuery('by a new write'))));
        }),
      );
      await later();
      expect(read).to.equal(0);
      expect(tries.map((t) => t.ok)).to.deep.equal([false, false, false]);
      expect(committed()).to.deep.equal([]);
      await usable();
    });

    async function usable() {
      expect(db.inTransaction).to.equal(false);
      await commits.run(insert('after'));
      expect(committed()).to.include('after');
    }
  });

  describe('transaction helpers (atomically, withSavepoint)', () => {
    it('rolls back and rethrows whatever the function throws, null included', () => {
      let thrown: unknown = 'nothing';
      try {
        atomically(db, () => {
          insert('a')();
          throw null;
        });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).to.equal(null);
      expect(db.inTransaction).to.equal(false);
      expect(committed()).to.deep.equal([]);
    });

    it('rolls the whole transaction back when a step cannot be undone alone; carrying on writes nothing', () => {
      const stmt = db.prepare('INSERT INTO "item" ("name") VALUES (?)');
      const seen: unknown[] = [];
      expect(() =>
        atomically(db, () => {
          query(undefined, stmt, 'run', ['a']);
          try {
            withSavepoint(db, () => {
              query(undefined, stmt, 'run', ['half-done']);
              // The step's savepoint released under it: ROLLBACK TO fails (no such savepoint).
              db.exec('RELEASE bp_step');
              throw new AppError('VALIDATION_FAILED', 'refused after writing');
            });
          } catch (err) {
            seen.push(err);
          }
          // A caller that records the failure and carries on, as runIdempotent does.
          query(undefined, stmt, 'run', ['carried on']);
        }),
      ).to.throw(/after its transaction ended/);
      expect(String((seen[0] as Error).message)).to.match(/no such savepoint/);
      expect(db.inTransaction).to.equal(false);
      expect(committed()).to.deep.equal([]);
    });

    it('keeps the real failure when ROLLBACK fails too, and rolls the dead transaction back next time', () => {
      let open: IterableIterator<unknown> | undefined;
      try {
        expect(() =>
          atomically(db, () => {
            insert('a')();
            open = db.prepare('SELECT "name" FROM "item"').iterate();
            open.next();
            throw new AppError('VALIDATION_FAILED', 'the real failure');
          }),
        ).to.throw('the real failure');
      } finally {
        open?.return?.();
      }
      atomically(db, () => insert('b')());
      expect(db.inTransaction).to.equal(false);
      expect(committed()).to.deep.equal(['b']);
    });
  });

  it('is one per connection', () => {
    expect(groupCommit(db)).to.equal(commits);
  });
});
