// GET (and HEAD) /healthz and /readyz, for load balancers and orchestrators.
//
// /healthz: the process is up and its event loop answers. /readyz: the database accepts a write
// now, proved by one: a one-row upsert into _bp_ready, committed like every other write (on
// SQLite through the group commit, so it also waits its turn behind a lock, and fails on a full
// WAL, a read-only file or an I/O error; on PostgreSQL it needs a pooled connection and a
// commit). Both answer 200 {"status":"ok"}; a failed readiness answers 503 with the error
// envelope (STORAGE_UNAVAILABLE or DATABASE_BUSY) and Retry-After.
//
// The front door answers them before the pipeline: no credentials are read (a bad Authorization
// header does not make them 401), no session is loaded or made, no cookie set. They get an
// X-Trace-ID, which names their log line when they fail, but are not kept in the trace store:
// a probe every few seconds would push the app's own requests out of it.

import type { ServerResponse } from 'node:http';
import { AppError } from '../core/errors.ts';
import { type Database, run, storageUnavailable } from '../data/database.ts';
import { ActiveTrace } from '../observe/tracing.ts';
import type { ApiRequest } from './request.ts';
import { type ErrorSender, sendJson } from './respond.ts';

export const READY_TABLE = '_bp_ready';

/** Answers the request when it is a probe and says so; false lets every other request through. */
export type Probes = (req: ApiRequest, res: ServerResponse, sendError: ErrorSender) => boolean;

const OK = { status: 'ok' };

/** The probes of an app on `db`, whose migrations (and so _bp_ready) are applied. */
export function healthProbes(db: Database): Probes {
  const mark = `INSERT INTO "${READY_TABLE}" ("id", "checkedAt") VALUES ('probe', ?)
     ON CONFLICT ("id") DO UPDATE SET "checkedAt" = excluded."checkedAt"`;
  const answer = (res: ServerResponse, body: unknown): void => {
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, 200, body);
  };
  return (req, res, sendError) => {
    const probe = probeOf(req.url ?? '/');
    if (probe === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    const trace = new ActiveTrace();
    req.trace = trace;
    res.setHeader('X-Trace-ID', trace.traceId);
    if (probe === 'health') {
      answer(res, OK);
      return true;
    }
    db.writeEach(run(mark, [Date.now()]), trace).then(
      () => answer(res, OK),
      (err: unknown) => {
        // Whatever stops the write (corruption too, which requests see as a 500) means not ready.
        sendError(err instanceof AppError && err.status === 503 ? err : storageUnavailable(err), req, res);
      },
    );
    return true;
  };
}

/** Exactly /healthz or /readyz, with or without a query string. */
function probeOf(url: string): 'health' | 'ready' | undefined {
  if (url === '/healthz' || url.startsWith('/healthz?')) return 'health';
  if (url === '/readyz' || url.startsWith('/readyz?')) return 'ready';
  return undefined;
}
