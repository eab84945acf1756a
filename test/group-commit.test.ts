// Group commit (runtime-lib/group-commit.ts) on a real SQLite file: writes of one event-loop turn
// share a transaction, fail alone, and are answered only once committed.

import * as path from 'node:path';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { openDatabase, type Db } from '../runtime-lib/data/db.ts';
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

  it('refuses an asynchronous write, undoing what it did before its first await', async () => {
    const result = await settle(
      commits.run(async () => {
        insert('before-await')();
        await Promise.resolve();
        insert('after-await')();
      }),
    );
    expect(result.ok).to.equal(false);
    expect(String((result as { error: Error }).error.message)).to.match(/must be synchronous/);
    // Let the stray continuation run (outside any transaction, as such code would in production).
    await new Promise((r) => setImmediate(r));
    expect(committed()).to.not.include('before-await');
  });

  it('is one per connection', () => {
    expect(groupCommit(db)).to.equal(commits);
  });
});
