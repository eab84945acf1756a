// Mocha root hooks (loaded by .mocharc.json): what the whole run shares is released at its end,
// and with BP_FILE_TIMES=<path> each file's wall time is written there (support/file-times.ts).

import type { Context } from 'mocha';
import { ROOT } from './apps.ts';
import { noteTestEnd, startTiming, writeFileTimes } from './file-times.ts';
import { stopPostgres } from './postgres.ts';

const fileTimes = process.env.BP_FILE_TIMES;

export const mochaHooks = {
  beforeAll(): void {
    if (fileTimes) startTiming();
  },
  afterEach(this: Context): void {
    if (fileTimes) noteTestEnd(this.currentTest?.file);
  },
  async afterAll(): Promise<void> {
    await stopPostgres();
    if (fileTimes) writeFileTimes(fileTimes, ROOT);
  },
};
