// Triggers that must start their workflow once across every instance of the app: a schedule's tick
// (every instance's timer fires for it) and a signed webhook delivery (a replay carries the same
// signature). The first transaction to record the key wins; the others see it taken. Keys are kept
// as long as a duplicate could still arrive, then deleted by later calls.

import { type Work, run } from '../data/database.ts';

export const FIRED_TABLE = '_bp_triggers_fired';
const T = `"${FIRED_TABLE}"`;

/**
 * Records `key` for `keepMs`, in the caller's transaction: true when this call was first, false
 * when the key was already taken (and not yet expired).
 */
export function* fireOnce(key: string, keepMs: number): Work<boolean> {
  const now = Date.now();
  yield* run(`DELETE FROM ${T} WHERE "expiresAt" < ?`, [now]);
  const { changes } = yield* run(`INSERT INTO ${T} ("key", "expiresAt") VALUES (?, ?) ON CONFLICT ("key") DO NOTHING`, [
    key,
    now + keepMs,
  ]);
  return changes > 0;
}
