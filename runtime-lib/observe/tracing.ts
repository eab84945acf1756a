// Request tracing kept in memory for the development admin server: a trace per request with
// spans for the HTTP request, route matching and each database query. Bounded by count and age
// (1,000 traces, 5 minutes) so a busy app cannot grow it without limit.

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

  add(trace: Trace): void {
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

/** A trace being recorded. Times come from the monotonic clock, anchored to the epoch once. */
export class ActiveTrace {
  readonly traceId = nextTraceId();
  readonly spans: OpenSpan[] = [];
  private readonly epochStart = Date.now();
  private readonly monoStart = performance.now();

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
