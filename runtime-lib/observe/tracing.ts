// Request tracing kept in memory for the development admin server: a trace per request with
// spans for the HTTP request, route matching and each database query. Bounded by count and age
// (1,000 traces, 5 minutes) so a busy app cannot grow it without limit. A request carrying a valid
// W3C `traceparent` header continues the caller's trace id, so a distributed trace joins ours.

import { randomFillSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';

export interface Span {
  id: number;
  parentId?: number;
  name: string;
  type: string;
  /** Epoch milliseconds (fractional). */
  startTime: number;
  endTime: number;
  duration: number;
  attributes?: Record<string, unknown>;
}

export interface Trace {
  traceId: string;
  startTime: number;
  duration: number;
  metadata: { method: string; path: string; statusCode: number; route?: string };
  spans: Span[];
}

export class TraceStore {
  private readonly traces = new Map<string, Trace>();

  constructor(
    readonly maxTraces = 1000,
    readonly maxAgeMs = 5 * 60 * 1000,
  ) {}

  /**
   * Files a finished trace. Two requests of one caller's distributed trace (traceparent) share an
   * id: the newer one replaces the older, and moves to the end so the order stays oldest first.
   */
  add(trace: Trace): void {
    this.traces.delete(trace.traceId);
    this.traces.set(trace.traceId, trace);
    // Maps iterate in insertion order, so the first entries are the oldest.
    if (this.traces.size > this.maxTraces) {
      const oldest = this.traces.keys().next().value as string;
      this.traces.delete(oldest);
    }
  }

  /** Newest first, after dropping traces older than the age limit. */
  list(limit = this.maxTraces): Trace[] {
    this.expire();
    return [...this.traces.values()].reverse().slice(0, limit);
  }

  /**
   * Adds a span under the root of a filed trace: the run of a workflow job that the trace's request
   * caused, which ends after the response. False when the trace is no longer kept.
   */
  attach(traceId: string, span: Omit<Span, 'id' | 'parentId'>): boolean {
    const trace = this.traces.get(traceId);
    if (!trace) return false;
    trace.spans.push({ ...span, id: trace.spans.length + 1, parentId: trace.spans[0]?.id });
    return true;
  }

  get(traceId: string): Trace | undefined {
    this.expire();
    return this.traces.get(traceId);
  }

  clear(): void {
    this.traces.clear();
  }

  private expire(): void {
    const cutoff = Date.now() - this.maxAgeMs;
    for (const [id, trace] of this.traces) {
      if (trace.startTime >= cutoff) break;
      this.traces.delete(id);
    }
  }
}

/**
 * Trace ids (32 hex characters, W3C trace-id sized) cut from a pool of random bytes filled 256
 * ids at a time: one system call per 256 requests instead of one each.
 */
const idPool = Buffer.alloc(16 * 256);
let idOffset = idPool.length;
function nextTraceId(): string {
  if (idOffset === idPool.length) {
    randomFillSync(idPool);
    idOffset = 0;
  }
  idOffset += 16;
  return idPool.toString('hex', idOffset - 16, idOffset);
}

export interface SpanHandle {
  readonly id: number;
  end(attributes?: Record<string, unknown>): void;
}

/** A recorded span and its handle in one object: no closures per span on the request path. */
class OpenSpan implements Span, SpanHandle {
  endTime = 0;
  duration = 0;

  constructor(
    private readonly clock: ActiveTrace,
    readonly id: number,
    readonly parentId: number | undefined,
    readonly name: string,
    readonly type: string,
    readonly startTime: number,
    public attributes: Record<string, unknown> | undefined,
  ) {}

  end(extra?: Record<string, unknown>): void {
    if (this.endTime !== 0) return;
    this.endTime = this.clock.now();
    this.duration = this.endTime - this.startTime;
    if (extra) this.attributes = { ...this.attributes, ...extra };
  }

  toJSON(): Span {
    const { id, parentId, name, type, startTime, endTime, duration, attributes } = this;
    return { id, parentId, name, type, startTime, endTime, duration, attributes };
  }
}

/** Who hears of every finished trace (the Prometheus metrics, when they are on). */
export interface TraceObserver {
  observe(trace: Trace): void;
}

const NOT_HEX = 0;
const ZEROS = 1;
const NONZERO = 2;
/**
 * Whether `text[from, to)` is lower-case hex (as W3C Trace Context requires), and if so whether a
 * digit is not 0. A loop over char codes: no regex or allocation on the request path.
 */
function hexRun(text: string, from: number, to: number): typeof NOT_HEX | typeof ZEROS | typeof NONZERO {
  let found: typeof ZEROS | typeof NONZERO = ZEROS;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if ((c > 48 && c <= 57) || (c >= 97 && c <= 102)) found = NONZERO;
    else if (c !== 48) return NOT_HEX;
  }
  return found;
}

/**
 * A W3C traceparent (https://www.w3.org/TR/trace-context/#traceparent-header): `00-<trace-id, 32
 * hex>-<parent-id, 16 hex>-<flags, 2 hex>`, ids not all zeros, version `ff` invalid. A later
 * version may append fields after a dash; version 00 may not.
 */
export function isTraceparent(header: string): boolean {
  const n = header.length;
  if (n < 55 || header.charCodeAt(2) !== 45 || header.charCodeAt(35) !== 45 || header.charCodeAt(52) !== 45) {
    return false;
  }
  if (hexRun(header, 0, 2) === NOT_HEX || hexRun(header, 53, 55) === NOT_HEX) return false;
  const v0 = header.charCodeAt(0);
  const v1 = header.charCodeAt(1);
  if (v0 === 48 && v1 === 48 ? n !== 55 : (v0 === 102 && v1 === 102) || (n > 55 && header.charCodeAt(55) !== 45)) {
    return false;
  }
  return hexRun(header, 3, 35) === NONZERO && hexRun(header, 36, 52) === NONZERO;
}

/** A trace being recorded. Times come from the monotonic clock, anchored to the epoch once. */
export class ActiveTrace {
  readonly traceId: string;
  /** The caller's span (traceparent's parent-id) when the request continued the caller's trace. */
  readonly parentSpanId: string | undefined;
  readonly spans: OpenSpan[] = [];
  private readonly epochStart = Date.now();
  private readonly monoStart = performance.now();

  /** `traceparent`: the request's header of that name; a valid one gives the trace its id. */
  constructor(traceparent?: string) {
    if (traceparent !== undefined && isTraceparent(traceparent)) {
      this.traceId = traceparent.slice(3, 35);
      this.parentSpanId = traceparent.slice(36, 52);
    } else {
      this.traceId = nextTraceId();
      this.parentSpanId = undefined;
    }
  }

  /** Spans without an explicit parent hang under the first (the http.request) span. */
  startSpan(name: string, type: string, attributes?: Record<string, unknown>, parentId?: number): SpanHandle {
    const span = new OpenSpan(
      this,
      this.spans.length + 1,
      parentId ?? (this.spans.length ? 1 : undefined),
      name,
      type,
      this.now(),
      attributes,
    );
    this.spans.push(span);
    return span;
  }

  finish(metadata: Trace['metadata']): Trace {
    for (const span of this.spans) span.end();
    const end = this.now();
    return {
      traceId: this.traceId,
      startTime: this.epochStart,
      duration: end - this.epochStart,
      metadata,
      spans: this.spans,
    };
  }

  now(): number {
    return this.epochStart + (performance.now() - this.monoStart);
  }
}
