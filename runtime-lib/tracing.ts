// Request tracing kept in memory for the development admin server: a trace per request with
// spans for the HTTP request, route matching and each database query. Bounded by count and age
// (spec 8: 1,000 traces, 5 minutes) so a busy app cannot grow it without limit.

import { randomUUID } from 'node:crypto';
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

export interface SpanHandle {
  readonly id: number;
  end(attributes?: Record<string, unknown>): void;
}

/** A trace being recorded. Times come from the monotonic clock, anchored to the epoch once. */
export class ActiveTrace {
  // randomUUID draws from a cached entropy pool: much cheaper per request than randomBytes.
  readonly traceId = randomUUID().replace(/-/g, '');
  readonly spans: Span[] = [];
  private readonly epochStart = Date.now();
  private readonly monoStart = performance.now();
  private nextId = 1;

  /** Spans without an explicit parent hang under the first (the http.request) span. */
  startSpan(name: string, type: string, attributes?: Record<string, unknown>, parentId?: number): SpanHandle {
    const span: Span = { id: this.nextId++, parentId: parentId ?? (this.spans.length ? 1 : undefined), name, type, startTime: this.now(), endTime: 0, duration: 0, attributes };
    this.spans.push(span);
    return {
      id: span.id,
      end: (extra) => {
        if (span.endTime !== 0) return;
        span.endTime = this.now();
        span.duration = span.endTime - span.startTime;
        if (extra) span.attributes = { ...span.attributes, ...extra };
      },
    };
  }

  finish(metadata: Trace['metadata']): Trace {
    const end = this.now();
    for (const span of this.spans) {
      if (span.endTime === 0) {
        span.endTime = end;
        span.duration = end - span.startTime;
      }
    }
    return { traceId: this.traceId, startTime: this.epochStart, duration: end - this.epochStart, metadata, spans: this.spans };
  }

  private now(): number {
    return this.epochStart + (performance.now() - this.monoStart);
  }
}
