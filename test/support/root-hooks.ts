// Mocha root hooks (loaded by .mocharc.json): what the whole run shares is released at its end,
// and with BP_FILE_TIMES=<path> each file's wall time is written there (support/file-times.ts).
//
// `npm test` runs files in parallel worker processes (mocha --parallel), where these hooks run
// around every file: a worker's PostgreSQL then lives as long as the worker (it is killed when the
// worker exits, support/postgres.ts) instead of being started again for each file, and each file's
// time is appended as the file ends.

import type { Context } from 'mocha';
import { ROOT } from './apps.ts';
import { appendFileTime, noteTestEnd, startTiming, writeFileTimes } from './file-times.ts';
import { stopPostgres } from './postgres.ts';

const fileTimes = process.env.BP_FILE_TIMES;
const inWorker = process.env.MOCHA_WORKER_ID !== undefined;

export const mochaHooks = {
  beforeAll(): void {
    if (fileTimes) startTiming();
  },
  afterEach(this: Context): void {
    if (fileTimes) noteTestEnd(this.currentTest?.file);
  },
  async afterAll(): Promise<void> {
    if (inWorker) {
      if (fileTimes) appendFileTime(fileTimes, ROOT);
      return;
    }
    await stopPostgres();
    if (fileTimes) writeFileTimes(fileTimes, ROOT);
  },
};
