// The request pipeline of a generated app: steps composed into one, the trace of every request
// and the route.match span. Every response carries X-Trace-ID.
//
// Everything here works on node's own request and response objects, so the front door
// (http/front-door.ts) runs it without Express; Express runs the same functions as middleware
// for the routes it serves.

import type { ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { ActiveTrace, type TraceObserver, type TraceStore } from '../observe/tracing.ts';
import { type ApiRequest, type Middleware, pathOf } from './request.ts';

/**
 * Runs pipeline steps in order, as one step. Every request passes through the pipeline (tracing,
 * credentials, CSRF), and in Express each layer costs a match and a dispatch.
 */
export function compose(...handlers: Middleware[]): Middleware {
  return (req, res, done) => {
    let index = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== 'route') return done(err);
      const handler = handlers[index++];
      if (!handler) return done();
      try {
        const result = handler(req, res, next);
        if (result instanceof Promise) result.catch(done);
      } catch (e) {
        done(e);
      }
    };
    next();
  };
}

/** Only requests whose path is one of `paths` or under one of `prefixes` reach `handler`. */
export function onlyFor(
  paths: readonly string[],
  prefixes: readonly string[],
  handler: RequestHandler,
): RequestHandler {
  return (req, res, next) => {
    const path = req.path;
    if (paths.includes(path) || prefixes.some((p) => path.startsWith(p))) return handler(req, res, next);
    next();
  };
}

/**
 * Starts the trace and its http.request span; files the trace when the response ends, and tells
 * `observer` (the metrics, when on). A valid `traceparent` header continues the caller's trace:
 * its trace id is ours (and X-Trace-ID's), the http.request span names the caller's span.
 */
export function tracing(store: TraceStore, observer?: TraceObserver): Middleware {
  // One listener for every request (it reads the response as `this`), not a closure per request.
  function fileTrace(this: ServerResponse): void {
    const req = this.req as ApiRequest;
    const trace = req.trace;
    const root = trace.spans[0];
    root?.end({ statusCode: this.statusCode });
    // The path as the request arrived: Express rewrites req.url inside mounted routers.
    const path = (root?.attributes?.path as string | undefined) ?? pathOf(req.url);
    const finished = trace.finish({
      method: req.method ?? 'GET',
      path,
      statusCode: this.statusCode,
      route: req.routeName,
    });
    store.add(finished);
    observer?.observe(finished);
  }
  return (req, res, next) => {
    const traceparent = req.headers.traceparent;
    const trace = new ActiveTrace(typeof traceparent === 'string' ? traceparent : undefined);
    req.trace = trace;
    res.setHeader('X-Trace-ID', trace.traceId);
    const parentSpanId = trace.parentSpanId;
    const attributes =
      parentSpanId === undefined
        ? { method: req.method, path: pathOf(req.url) }
        : { method: req.method, path: pathOf(req.url), parentSpanId };
    req.rootSpanId = trace.startSpan('http.request', 'http', attributes).id;
    res.once('finish', fileTrace);
    next();
  };
}

/** Last step of the pipeline: the route.match span runs from here to the matched route. */
export const routing: Middleware = (req, _res, next) => {
  req.routeSpan = req.trace?.startSpan('route.match', 'routing', undefined, req.rootSpanId);
  next();
};

/** Closes the route.match span and names the route in the trace. */
export function routeMatched(req: ApiRequest, route: string): void {
  req.routeSpan?.end({ route });
  req.routeName = route;
}

/** First handler of every Express route: routeMatched as middleware. */
export function matched(route: string): Middleware {
  return (req, _res, next) => {
    routeMatched(req, route);
    next();
  };
}
