// Checkpoints the app's SQLite WAL from a worker thread with its own connection, so the copy of
// pages into the database file and its fsync never run on the request thread. Started by
// openDatabase (db.ts). Plain JavaScript: worker threads do not inherit the TypeScript loader.

import { statSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** @type {{ file: string, intervalMs: number, maxWalBytes: number }} */
const { file, intervalMs, maxWalBytes } = workerData;
const db = new Database(file);
db.pragma('busy_timeout = 1000');

function walBytes() {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

const timer = setInterval(() => {
  try {
    // PASSIVE never waits for readers or writers: what cannot be copied now is copied next time.
    // Under sustained writes it may never finish, so past a size the log is truncated, which
    // makes writers wait for that one checkpoint: a rare pause instead of an unbounded file.
    db.pragma(walBytes() > maxWalBytes ? 'wal_checkpoint(TRUNCATE)' : 'wal_checkpoint(PASSIVE)');
  } catch {
    // A busy database is fine: the next tick tries again.
  }
}, intervalMs);

parentPort?.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
