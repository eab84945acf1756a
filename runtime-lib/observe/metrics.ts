// Prometheus metrics of the app (prom-client, on a registry of its own, never the global one): requests
// and their latency by route and status, database time by span, jobs by state, and the process's own
// metrics. Fed by every finished trace (http/pipeline.ts `tracing`). Loaded and created only when
// something will read them (ADMIN_PORT in development, METRICS_PORT in any mode): an app without
// either never loads prom-client.

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Trace, TraceObserver } from './tracing.ts';

/** Jobs by state: pending, running, completed, failed. */
export type JobCounts = Readonly<Record<string, number>>;

const MISNAMED_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];
const JOB_STATES = ['pending', 'running', 'completed', 'failed'] as const;
/** Seconds: from a cached read (about 1 ms) to a slow page. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const QUERY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export class AppMetrics implements TraceObserver {
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'status_code'>;
  private readonly latency: Histogram<'route' | 'status_code'>;
  private readonly queries: Histogram<'span' | 'dialect'>;
  private jobCounts: (() => Promise<JobCounts>) | undefined;

  /** `dialect`: the database's (sqlite, postgres), a label of the query times. */
  constructor(private readonly dialect: string) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // Gauges named as counters (promtool check metrics refuses them); their per-type series stay
    // (nodejs_active_handles, nodejs_active_requests, nodejs_active_resources), and they sum to these.
    for (const name of MISNAMED_DEFAULTS) this.registry.removeSingleMetric(name);
    this.requests = new Counter({
      name: 'bp_http_requests_total',
      help: 'HTTP requests answered, by route (the matched route, or unmatched) and status code.',
      labelNames: ['route', 'status_code'],
      registers,
    });
    this.latency = new Histogram({
      name: 'bp_http_request_duration_seconds',
      help: 'Time from the request to the end of its response, by route and status code.',
      labelNames: ['route', 'status_code'],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.queries = new Histogram({
      name: 'bp_database_query_duration_seconds',
      help: 'Time of database spans of requests: database.query (a statement), database.commit (a group commit).',
      labelNames: ['span', 'dialect'],
      buckets: QUERY_BUCKETS,
      registers,
    });
    const readJobs = async (): Promise<JobCounts> => (await this.jobCounts?.()) ?? {};
    new Gauge({
      name: 'bp_jobs',
      help: 'Workflow jobs in the database, by state.',
      labelNames: ['state'],
      registers,
      // Read at scrape time; a failed read (the database going away) leaves the last values.
      async collect() {
        let counts: JobCounts;
        try {
          counts = await readJobs();
        } catch {
          return;
        }
        for (const state of JOB_STATES) this.set({ state }, counts[state] ?? 0);
      },
    });
  }

  /** Where the job counts come from (an app with workflows); without it, every state counts 0. */
  countJobs(source: () => Promise<JobCounts>): void {
    this.jobCounts = source;
  }

  observe(trace: Trace): void {
    // The route's name, never the path: paths carry ids, and each label value is a time series.
    const labels = { route: trace.metadata.route ?? 'unmatched', status_code: trace.metadata.statusCode };
    this.requests.inc(labels);
    this.latency.observe(labels, trace.duration / 1000);
    for (const span of trace.spans) {
      if (span.name === 'database.query' || span.name === 'database.commit') {
        this.queries.observe({ span: span.name, dialect: this.dialect }, span.duration / 1000);
      }
    }
  }

  /** The Prometheus text exposition and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
