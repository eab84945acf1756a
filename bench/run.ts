// `npm run bench`: the generated reference app against hand-written baselines on the same tables
// and data, on SQLite and on PostgreSQL. Each server is driven alone (the machine has few cores),
// on its own copy of the seeded database, by bench/load.ts in a separate process; the PostgreSQL
// section runs its servers side by side and interleaves their rounds. See bench/README.md.
//
// `npm run bench -- --only sqlite` or `--only postgres` (or BENCH_ONLY=…) runs one section; `--only dev`
// runs only bp dev's save-to-reload and error-overlay times (bench/dev-section.ts).
// Settings from the environment: BENCH_WARMUP_SECONDS (5), BENCH_ROUND_SECONDS (3), BENCH_ROUNDS (3).

import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { devSection } from './dev-section.ts';
import type { RoundResult } from './plan.ts';
import { postgresSection } from './postgres-section.ts';
import { WORK, buildApp, cleanWork, generateApp, seedRows, writerKeyEnv, type SeedRows } from './prepare.ts';
import { benchSettings, killChildren, type RunContext } from './servers.ts';
import { sqliteSection } from './sqlite-section.ts';

const SECTIONS: Record<string, (ctx: RunContext, seed: SeedRows) => Promise<Record<string, RoundResult[]>>> = {
  sqlite: sqliteSection,
  postgres: postgresSection,
};

function chosenSections(): string[] {
  const { values } = parseArgs({ options: { only: { type: 'string' } } });
  const only = values.only ?? process.env.BENCH_ONLY;
  if (only === undefined || only === '') return [...Object.keys(SECTIONS), 'dev'];
  if (!(only in SECTIONS) && only !== 'dev') {
    throw new Error(`--only takes one of ${[...Object.keys(SECTIONS), 'dev'].join(', ')} (got "${only}")`);
  }
  return [only];
}

async function main(): Promise<void> {
  const began = Date.now();
  const chosen = chosenSections();
  // bp dev's section needs none of the servers' preparation.
  const sections = chosen.filter((s) => s !== 'dev');
  if (!sections.length) return devSection();
  const settings = benchSettings();
  cleanWork();
  for (const dir of ['db', 'logs']) fs.mkdirSync(path.join(WORK, dir));
  console.log('generating the reference app and its production build, and the seed rows…');
  generateApp();
  buildApp();
  const seed = seedRows();
  const idsFile = path.join(WORK, 'ids.json');
  fs.writeFileSync(idsFile, JSON.stringify(seed.ticketIds));
  const apiKey = randomBytes(24).toString('hex');
  const credentials = {
    apiKey,
    env: { API_KEY: apiKey, [writerKeyEnv()]: apiKey, SESSION_SECRET: randomBytes(48).toString('base64') },
  };
  const ctx: RunContext = { settings, credentials, ids: seed.ticketIds, idsFile };

  const rounds: Record<string, RoundResult[]> = {};
  const written: string[] = [];
  for (const section of sections) {
    for (const [key, rs] of Object.entries(await SECTIONS[section](ctx, seed))) rounds[`${section} ${key}`] = rs;
    written.push(
      section === 'sqlite'
        ? 'bench/.work/results.json, results.md'
        : 'bench/.work/results-postgres.json, results-postgres.md',
    );
  }

  const pinned = settings.pinned ? ' (load generator on CPU 1)' : '';
  console.log(
    `\n${settings.connections} connections${pinned}, best of ${settings.rounds} rounds of ${settings.roundSeconds} s ` +
      `after ${settings.warmupSeconds} s of warm-up, per operation.`,
  );
  console.log(`Written: ${written.join('; ')} (${Math.round((Date.now() - began) / 1000)} s in all)`);
  if (chosen.includes('dev')) await devSection();

  const failed = Object.entries(rounds).flatMap(([key, rs]) =>
    rs.filter((r) => r.non2xx + r.errors + r.timeouts > 0).map((r) => `${key} ${r.operation} round ${r.round}`),
  );
  if (failed.length) {
    console.error(
      `\nINVALID: some requests failed, so these numbers do not compare like with like: ${failed.join(', ')}`,
    );
    process.exitCode = 1;
  }
}

process.on('SIGINT', () => {
  killChildren();
  process.exit(130);
});

try {
  await main();
} catch (err) {
  killChildren();
  console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
