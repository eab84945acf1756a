// Mocha root hooks (loaded by .mocharc.json): what the whole run shares is released at its end.

import { stopPostgres } from './postgres.ts';

export const mochaHooks = {
  async afterAll(): Promise<void> {
    await stopPostgres();
  },
};
