// The app's front door: the health and readiness probes are answered first, without the
// pipeline (http/health.ts); every other request passes the pipeline (trace, credentials, CSRF)
// here, then the entity CRUD routes and the command routes are dispatched straight from tables
// the generator wrote; everything else (sign-in, audit, the OpenAPI document, 404s) goes on to
// Express.
//
// Why not Express for all of it: on this project's reference machine Express's own request
// handling (its router, the prototype swaps on every request and response) cost about 300 µs per
// request, more than reading a record from SQLite and sending it. The CRUD routes are known when
// the app is generated; matching them is two string comparisons.
//
// The same route functions are also mounted on Express (crudRouter, commandRouter) for the URL
// forms the tables leave to it (a trailing slash, other letter case, HEAD), so every form answers
// the same way.

import type { RequestListener, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { Router } from 'express';
import type { CommandRoute } from './command-routes.ts';
import type { Probes } from './health.ts';
import { jsonBody, untakenCsrf } from './body.ts';
import { matched, routeMatched } from './pipeline.ts';
import type { ApiRequest, Middleware } from './request.ts';
import type { ErrorSender } from './respond.ts';

/** An entity's CRUD routes, as its generated module defines them. */
export interface CrudRoutes {
  list(req: ApiRequest, res: ServerResponse, query: Record<string, unknown>): Promise<void>;
  get(req: ApiRequest, res: ServerResponse, id: string): Promise<void>;
  create(req: ApiRequest, res: ServerResponse): Promise<void>;
  update(req: ApiRequest, res: ServerResponse, id: string): Promise<void>;
  delete(req: ApiRequest, res: ServerResponse, id: string): Promise<void>;
}

export interface CrudEntity {
  /** Entity name: routes are named `<name>.list`, `<name>.get`... in traces. */
  name: string;
  /** Mounted at /api/<collection>. */
  collection: string;
  routes: CrudRoutes;
  /**
   * Reads the body of a create or update; JSON (http/body.ts jsonBody) when absent. An entity
   * with file fields takes multipart bodies too (runtime/uploads/entity-files.ts).
   */
  body?: Middleware;
}

/** The routes' names in traces: `<Entity>.list`, `<Entity>.get`... */
function routeNames(name: string): Record<keyof CrudRoutes, string> {
  return {
    list: `${name}.list`,
    get: `${name}.get`,
    create: `${name}.create`,
    update: `${name}.update`,
    delete: `${name}.delete`,
  };
}

/** The Express form of an entity's routes, mounted at /api/<collection>. */
export function crudRouter({ name, routes, body = jsonBody }: CrudEntity): Router {
  const names = routeNames(name);
  const router = Router();
  router.get('/', matched(names.list), (req, res) => routes.list(req, res, req.query as Record<string, unknown>));
  router.get('/:id', matched(names.get), (req, res) => routes.get(req, res, String(req.params.id)));
  router.post('/', matched(names.create), body, (req, res) => routes.create(req, res));
  router.put('/:id', matched(names.update), body, (req, res) => routes.update(req, res, String(req.params.id)));
  router.delete('/:id', matched(names.delete), (req, res) => routes.delete(req, res, String(req.params.id)));
  return router;
}

/**
 * The decoded id in `rest` from `start` on: one non-empty path segment, before any query string
 * (ignored on item routes, as by Express). Undefined when there is none, or when it is not valid
 * percent-encoding, which Express then answers (400).
 */
function lastSegment(rest: string, start: number): string | undefined {
  const q = rest.indexOf('?', start);
  const segment = q === -1 ? rest.slice(start) : rest.slice(start, q);
  if (segment === '' || segment.includes('/')) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

type Dispatch = (req: ApiRequest, res: ServerResponse, rest: string, done: (err: unknown) => void) => boolean;

/**
 * The table: `/api/<collection>` and `/api/<collection>/<id>`, exactly, for GET, POST, PUT and
 * DELETE. Returns false for anything else, which Express then serves.
 */
function dispatcher(entity: CrudEntity): Dispatch {
  const { routes, body = jsonBody } = entity;
  const names = routeNames(entity.name);
  return (req, res, rest, done) => {
    const method = req.method;
    if (rest === '' || rest[0] === '?') {
      if (method === 'GET') {
        routeMatched(req, names.list);
        routes.list(req, res, rest === '' ? {} : parseQuery(rest.slice(1))).catch(done);
        return true;
      }
      if (method === 'POST') {
        routeMatched(req, names.create);
        body(req, res, (err) => (err ? done(err) : routes.create(req, res).catch(done)));
        return true;
      }
      return false;
    }
    const id = lastSegment(rest, 1);
    if (id === undefined) return false;
    if (method === 'GET') {
      routeMatched(req, names.get);
      routes.get(req, res, id).catch(done);
    } else if (method === 'PUT') {
      routeMatched(req, names.update);
      body(req, res, (err) => (err ? done(err) : routes.update(req, res, id).catch(done)));
    } else if (method === 'DELETE') {
      routeMatched(req, names.delete);
      // A multipart body's CSRF token is read by no one here (http/body.ts deferCsrf).
      const refused = untakenCsrf(req);
      if (refused) done(refused);
      else routes.delete(req, res, id).catch(done);
    } else return false;
    return true;
  };
}

/** POST /api/commands/<operationId>/<id>, exactly (operation ids are case-sensitive). */
function commandDispatcher(commands: readonly CommandRoute[]): Dispatch {
  const byId = new Map(commands.map((c) => [c.operationId, c]));
  return (req, res, rest, done) => {
    if (req.method !== 'POST') return false;
    // rest: "/<operationId>/<id>"
    const slash = rest.indexOf('/', 1);
    const route = slash === -1 ? undefined : byId.get(rest.slice(1, slash));
    if (!route) return false;
    const id = lastSegment(rest, slash + 1);
    if (id === undefined) return false;
    routeMatched(req, route.name);
    const refused = untakenCsrf(req);
    if (refused) done(refused);
    else jsonBody(req, res, (err) => (err ? done(err) : route.run(req, res, id).catch(done)));
    return true;
  };
}

export interface FrontDoorOptions {
  /** Runs first for every request: tracing, credentials, CSRF, routing (http/pipeline.ts, auth/). */
  pipeline: Middleware;
  entities: readonly CrudEntity[];
  commands: readonly CommandRoute[];
  /** Everything the tables do not serve. */
  fallback: RequestListener;
  sendError: ErrorSender;
  /** GET and HEAD /healthz and /readyz (http/health.ts), answered before the pipeline. */
  probes?: Probes;
  /**
   * Whether the fallback's route for this request reads a multipart body with runtime/uploads
   * (receiveMultipart, which makes the CSRF check of its `_csrf` field): a server-rendered form
   * with a file input. Any other multipart request whose CSRF check waits on its body is refused.
   */
  readsMultipart?: (req: ApiRequest) => boolean;
}

export function frontDoor({
  pipeline,
  entities,
  commands,
  fallback,
  sendError,
  probes,
  readsMultipart = () => false,
}: FrontDoorOptions): RequestListener {
  const table = new Map(entities.map((e) => [e.collection, dispatcher(e)]));
  // Express mounts the entity routers first: an entity whose collection is "commands" wins.
  if (!table.has('commands')) table.set('commands', commandDispatcher(commands));
  return (incoming, res) => {
    const req = incoming as ApiRequest;
    if (probes?.(req, res, sendError)) return;
    const fail = (err: unknown): void => sendError(err, req, res);
    pipeline(req, res, (err) => {
      if (err) return fail(err);
      const url = req.url ?? '/';
      if (url.startsWith('/api/')) {
        // "/api/<collection>" then "", "?..." or "/<id>..."
        let end = 5;
        while (end < url.length && url[end] !== '/' && url[end] !== '?') end++;
        const dispatch = table.get(url.slice(5, end));
        try {
          if (dispatch?.(req, res, url.slice(end), fail)) return;
        } catch (e) {
          return fail(e);
        }
      }
      // The Express forms of the entity routes (a trailing slash...) read no token from a multipart body either.
      const refused = readsMultipart(req) ? undefined : untakenCsrf(req);
      if (refused) return fail(refused);
      fallback(req, res);
    });
  };
}
