// Turns the measured rounds into the console tables, results.json and results.md: requests/s and
// p99 per server, the generated app's ratio to each baseline, and the targets from the issue.

import * as os from 'node:os';
import type { Operation, RoundResult } from './plan.ts';

export interface ServerInfo {
  key: string;
  label: string;
}

export interface Settings {
  tickets: number;
  connections: number;
  warmupSeconds: number;
  roundSeconds: number;
  rounds: number;
  /** The load generator pinned to CPU 1 (bench/run.ts). */
  pinned: boolean;
}

export interface Target {
  operation: Operation;
  baseline: string;
  /** The generated app's requests/s must be at least this many times the baseline's. */
  atLeast: number;
}

export const OPERATION_LABELS: Record<Operation, string> = {
  get: 'get by id',
  list: 'list of 100',
  create: 'create',
  update: 'update',
  command: 'command',
  escalate: 'skill → job',
};

/**
 * The generated app's own footprint, run from its production build: cold start (spawn to the first
 * 200) and resident memory during the main run.
 */
export interface Footprint {
  /** The request whose first 200 ends a cold start. */
  probe: string;
  coldStartsMs: number[];
  /** Bytes, when the first warm-up round ended. */
  rssAfterWarmup: number;
  /** Bytes, when the last measured round ended. */
  rssAfterLoad: number;
  /** Bytes, the most seen at the end of any round. */
  rssMax: number;
  /** The same most for each hand-written server under the same load, for comparison. */
  baselineRssMax: Array<{ label: string; bytes: number }>;
  /** How the app was started. */
  command: string;
}

/** The issue's targets for the reference app. */
export const FOOTPRINT_TARGETS = { coldStartMs: 300, rssBytes: 120 * 1024 * 1024 };

const mb = (bytes: number) => (Number.isFinite(bytes) ? `${(bytes / 1024 / 1024).toFixed(0)} MB` : '—');

/** The footprint with its targets, one line each; a missed target says so. */
export function footprintLines(f: Footprint): string[] {
  const sorted = [...f.coldStartsMs].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  const coldPass = median < FOOTPRINT_TARGETS.coldStartMs;
  const rssPass = Math.max(f.rssAfterWarmup, f.rssAfterLoad) < FOOTPRINT_TARGETS.rssBytes;
  const target = (pass: boolean) => (pass ? 'PASS' : 'MISSED');
  return [
    `The generated app from its production build (${f.command}, NODE_ENV=production):`,
    `- ${target(coldPass)}: cold start, spawn to the first 200 on ${f.probe}: median ${Math.round(median)} ms ` +
      `(${sorted.map((ms) => Math.round(ms)).join(', ')} ms over ${sorted.length} starts); ` +
      `target under ${FOOTPRINT_TARGETS.coldStartMs} ms`,
    `- ${target(rssPass)}: resident memory ${mb(f.rssAfterWarmup)} after the warm-up, ` +
      `${mb(f.rssAfterLoad)} after the load ` +
      `(${mb(f.rssMax)} at most between rounds); target under ${mb(FOOTPRINT_TARGETS.rssBytes)}`,
    `  for comparison, the most at the end of a round under the same load: ` +
      f.baselineRssMax.map((b) => `${b.label} ${mb(b.bytes)}`).join(', '),
    ...(coldPass && rssPass
      ? []
      : [
          'Note: a target was missed on this run. ' +
            'The machine is shared: check the other-CPU column above before reading much into it.',
        ]),
  ];
}

/** Cores of CPU used by other processes above which a round counts as disturbed. */
export const DISTURBED_OTHER_CPU = 0.25;

/** The round with the most requests/s: interference from the rest of the machine only ever slows a round down. */
export function bestRound(rounds: RoundResult[]): RoundResult {
  return rounds.reduce((best, r) => (r.requestsPerSecond > best.requestsPerSecond ? r : best));
}

interface TargetOutcome extends Target {
  ratio: number;
  pass: boolean;
}

/** PASS, FAIL, or NOT MEASURED where a server of the comparison was not available. */
const verdict = (t: TargetOutcome) => (Number.isFinite(t.ratio) ? (t.pass ? 'PASS' : 'FAIL') : 'NOT MEASURED');

export interface Report {
  measuredAt: string;
  machine: { cpu: string; cores: number; node: string; platform: string };
  settings: Settings & { pick: string };
  servers: ServerInfo[];
  /** server key → operation → the best measured round. */
  results: Record<string, Partial<Record<Operation, RoundResult>>>;
  /** Every round, warm-ups (round 0) included. */
  rounds: Record<string, RoundResult[]>;
  /** baseline key → operation → generated app's requests/s ÷ the baseline's. */
  ratios: Record<string, Partial<Record<Operation, number>>>;
  /**
   * baseline key → operation → the baseline's server CPU per request ÷ the generated app's: what
   * the requests/s ratio would be with both servers CPU-bound, and far less moved by other work
   * on the machine than requests/s.
   */
  cpuRatios: Record<string, Partial<Record<Operation, number>>>;
  targets: TargetOutcome[];
  /** Chosen rounds that ran while other processes used more than DISTURBED_OTHER_CPU cores. */
  disturbed: string[];
  /** server key → why it could not be measured (it did not start, or answered wrongly). */
  unavailable: Record<string, string>;
}

export function buildReport(
  servers: ServerInfo[],
  app: string,
  operations: Operation[],
  rounds: Record<string, RoundResult[]>,
  settings: Settings,
  targets: Target[],
  unavailable: Record<string, string> = {},
): Report {
  const results: Report['results'] = {};
  for (const server of servers) {
    results[server.key] = {};
    for (const operation of operations) {
      const measured = (rounds[server.key] ?? []).filter((r) => r.operation === operation && r.round > 0);
      if (measured.length) results[server.key][operation] = bestRound(measured);
    }
  }
  const ratio = (baseline: string, operation: Operation) => {
    const ours = results[app][operation]?.requestsPerSecond;
    const theirs = results[baseline][operation]?.requestsPerSecond;
    return ours !== undefined && theirs ? ours / theirs : NaN;
  };
  const cpuRatio = (baseline: string, operation: Operation) => {
    const ours = results[app][operation]?.serverCpuPerRequest;
    const theirs = results[baseline][operation]?.serverCpuPerRequest;
    return ours && theirs !== undefined ? theirs / ours : NaN;
  };
  const ratios: Report['ratios'] = {};
  const cpuRatios: Report['cpuRatios'] = {};
  for (const server of servers) {
    if (server.key === app) continue;
    ratios[server.key] = Object.fromEntries(operations.map((op) => [op, ratio(server.key, op)]));
    cpuRatios[server.key] = Object.fromEntries(operations.map((op) => [op, cpuRatio(server.key, op)]));
  }
  const cpus = os.cpus();
  return {
    measuredAt: new Date().toISOString(),
    machine: {
      cpu: cpus[0]?.model ?? 'unknown',
      cores: cpus.length,
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
    },
    settings: { ...settings, pick: 'best measured round by requests/s (p99 from that round)' },
    servers,
    results,
    rounds,
    ratios,
    cpuRatios,
    targets: targets.map((t) => {
      const r = ratio(t.baseline, t.operation);
      return { ...t, ratio: r, pass: r >= t.atLeast };
    }),
    disturbed: servers.flatMap((server) =>
      operations.flatMap((op) => {
        const r = results[server.key][op];
        return r && r.otherCpu > DISTURBED_OTHER_CPU
          ? [`${server.label}, ${OPERATION_LABELS[op]} (${r.otherCpu.toFixed(2)} cores)`]
          : [];
      }),
    ),
    unavailable,
  };
}

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 1) : '—');
const times = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '—');

function labelOf(report: Report, key: string): string {
  return report.servers.find((s) => s.key === key)?.label ?? key;
}

/** Whether the rounds include PostgreSQL's CPU: then the tables show it per request too. */
const withDatabaseCpu = (report: Report) =>
  report.servers.some((s) => Object.values(report.results[s.key]).some((r) => r?.databaseCpuPerRequest !== undefined));

function notAvailableLines(report: Report): string[] {
  return Object.entries(report.unavailable).map(([key, why]) => `${labelOf(report, key)}: not available: ${why}`);
}

function targetLine(report: Report, t: TargetOutcome): string {
  return (
    `${OPERATION_LABELS[t.operation]}: generated app ≥ ${t.atLeast}× ${labelOf(report, t.baseline)} ` +
    `(measured ${times(t.ratio)})`
  );
}

export function consoleReport(report: Report, app: string): string {
  const width = Math.max(...report.servers.map((s) => s.label.length));
  const database = withDatabaseCpu(report);
  const lines: string[] = [];
  for (const operation of Object.keys(OPERATION_LABELS) as Operation[]) {
    if (!report.servers.some((s) => report.results[s.key][operation])) continue;
    lines.push(
      '',
      `${OPERATION_LABELS[operation]}`,
      `  ${'server'.padEnd(width)}  ${'req/s'.padStart(8)}  ${'p99 ms'.padStart(7)}  ${'CPU µs/req'.padStart(10)}  ` +
        `${database ? `${'DB µs/req'.padStart(9)}  ` : ''}${'app ÷ this'.padStart(10)}  ${'by CPU'.padStart(6)}`,
    );
    for (const server of report.servers) {
      if (report.unavailable[server.key]) {
        lines.push(`  ${server.label.padEnd(width)}  not available`);
        continue;
      }
      const r = report.results[server.key][operation];
      const isApp = server.key === app;
      const ratio = isApp ? '' : times(report.ratios[server.key][operation] ?? NaN);
      const cpu = isApp ? '' : times(report.cpuRatios[server.key][operation] ?? NaN);
      lines.push(
        `  ${server.label.padEnd(width)}  ${int(r?.requestsPerSecond ?? NaN).padStart(8)}  ` +
          `${ms(r?.p99 ?? NaN).padStart(7)}  ${int(r?.serverCpuPerRequest ?? NaN).padStart(10)}  ` +
          `${database ? `${int(r?.databaseCpuPerRequest ?? NaN).padStart(9)}  ` : ''}` +
          `${ratio.padStart(10)}  ${cpu.padStart(6)}`,
      );
    }
  }
  lines.push('', 'Targets');
  for (const t of report.targets) lines.push(`  ${verdict(t)}  ${targetLine(report, t)}`);
  const missing = notAvailableLines(report);
  if (missing.length) lines.push('', ...missing);
  if (report.disturbed.length) {
    lines.push(
      '',
      `Warning: other processes competed for the CPU during ${report.disturbed.length} of the chosen rounds:`,
    );
    for (const d of report.disturbed) lines.push(`  ${d}`);
    lines.push('Requests/s and their ratios are unreliable; rerun on an idle machine before recording them.');
  }
  return lines.join('\n');
}

/** `resultsFile`: where the rounds are, for the note on disturbed rounds. */
export function markdownReport(report: Report, app: string, resultsFile = 'results.json'): string {
  const { settings: s, machine: m } = report;
  const operations = (Object.keys(OPERATION_LABELS) as Operation[]).filter((op) =>
    report.servers.some((sv) => report.results[sv.key][op]),
  );
  const baselines = report.servers.filter((sv) => sv.key !== app);
  const lines = [
    `Measured ${report.measuredAt.slice(0, 10)} on ${m.cores} × ${m.cpu}, Node ${m.node}: ` +
      `${s.tickets.toLocaleString('en-US')} tickets, ` +
      `autocannon with ${s.connections} connections from a separate process${s.pinned ? ' pinned to CPU 1' : ''}, ` +
      `${s.warmupSeconds} s warm-up, best of ${s.rounds} rounds of ${s.roundSeconds} s. ` +
      'Cells: requests/s, p99 latency, server CPU per request' +
      `${withDatabaseCpu(report) ? " (+ PostgreSQL's CPU per request)" : ''}.`,
    '',
    `| Operation | ${report.servers.map((sv) => sv.label).join(' | ')} |`,
    `|---|${report.servers.map(() => '---:').join('|')}|`,
    ...operations.map(
      (op) =>
        `| ${OPERATION_LABELS[op]} | ${report.servers
          .map((sv) => {
            if (report.unavailable[sv.key]) return 'not available';
            const r = report.results[sv.key][op];
            const db = r?.databaseCpuPerRequest === undefined ? '' : ` + ${int(r.databaseCpuPerRequest)} µs`;
            return r
              ? `${int(r.requestsPerSecond)} req/s, ${ms(r.p99)} ms, ${int(r.serverCpuPerRequest)} µs${db}`
              : '—';
          })
          .join(' | ')} |`,
    ),
    '',
    `| ${labelOf(report, app)} ÷ | ${baselines.map((b) => b.label).join(' | ')} |`,
    `|---|${baselines.map(() => '---:').join('|')}|`,
    ...operations.map(
      (op) =>
        `| ${OPERATION_LABELS[op]} | ${baselines.map((b) => times(report.ratios[b.key][op] ?? NaN)).join(' | ')} |`,
    ),
    '',
    "The same by server CPU per request (the baseline's ÷ the generated app's):",
    '',
    `| ${labelOf(report, app)} ÷ | ${baselines.map((b) => b.label).join(' | ')} |`,
    `|---|${baselines.map(() => '---:').join('|')}|`,
    ...operations.map(
      (op) =>
        `| ${OPERATION_LABELS[op]} | ${baselines.map((b) => times(report.cpuRatios[b.key][op] ?? NaN)).join(' | ')} |`,
    ),
    '',
    'Targets:',
    '',
    ...report.targets.map((t) => `- ${verdict(t)}: ${targetLine(report, t)}`),
    // The reason is a server's own output (its last log lines): verbatim, in a code block.
    ...Object.entries(report.unavailable).flatMap(([key, why]) => [
      '',
      `${labelOf(report, key)}: not available:`,
      '',
      '```',
      why,
      '```',
    ]),
    ...(report.disturbed.length
      ? [
          '',
          `Other processes used more than ${DISTURBED_OTHER_CPU} cores ` +
            `during ${report.disturbed.length} of these rounds (see ${resultsFile}): ` +
            'rerun on an idle machine before recording these numbers.',
        ]
      : []),
  ];
  return `${lines.join('\n')}\n`;
}
