// API keys (auth.apiKeys): each key's value comes from the environment variable its blueprint
// entry names. Only a SHA-256 digest is kept in memory; presented tokens are hashed and compared
// with timingSafeEqual against every configured digest, so timing reveals nothing about keys.

import { hash, timingSafeEqual } from 'node:crypto';
import { type Actor, makeActor } from '../core/actor.ts';

/** A key as the generator resolved it: agentId, credentialId and displayName default to its name. */
export interface ApiKeyConfig {
  name: string;
  keyEnv: string;
  agentId: string;
  credentialId: string;
  displayName: string;
  roles: readonly string[];
  scopes: readonly string[];
}

export const MIN_API_KEY_LENGTH = 16;

export interface ApiKeyRegistry {
  /** The agent actor for a presented key, or undefined when no enabled key matches. */
  verify(token: string): Actor | undefined;
  readonly enabled: readonly string[];
}

/** One-shot hashing: no Hash object per request. */
const digest = (value: string): Buffer => hash('sha256', value, 'buffer') as unknown as Buffer;

/** Throws (refusing to start) when a key's variable is set but too short; warns when unset. */
export function loadApiKeys(
  configs: readonly ApiKeyConfig[],
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void,
): ApiKeyRegistry {
  const entries: Array<{ hash: Buffer; actor: Actor }> = [];
  const problems: string[] = [];
  for (const config of configs) {
    const value = env[config.keyEnv];
    if (value === undefined) {
      warn(`API key "${config.name}" is disabled: ${config.keyEnv} is not set`);
      continue;
    }
    if (value.trim().length < MIN_API_KEY_LENGTH) {
      problems.push(
        `${config.keyEnv} (API key "${config.name}") must be at least ${MIN_API_KEY_LENGTH} characters` +
          (value === '' ? ', and is empty' : ''),
      );
      continue;
    }
    entries.push({
      hash: digest(value),
      // A key without roles has none (as in Zebric 0.6): [auth.permissions] then treats it as it
      // treats anonymous callers. Its metadata is what Zebric's agent session user carries, less the
      // empty e-mail: a missing value never matches, an empty one could.
      actor: makeActor({
        kind: 'agent',
        id: config.agentId,
        credentialId: config.credentialId,
        roles: Object.freeze([...config.roles]),
        role: config.roles[0],
        scopes: Object.freeze([...config.scopes]),
        displayName: config.displayName,
        metadata: Object.freeze({ name: config.displayName, role: config.roles[0] }),
      }),
    });
  }
  if (problems.length) throw new Error(problems.join('; '));
  return {
    enabled: entries.map((e) => e.actor.credentialId as string),
    verify(token) {
      const presented = digest(token);
      let found: Actor | undefined;
      // Compare against every key, without stopping at a match, so timing does not depend on which.
      for (const entry of entries) if (timingSafeEqual(entry.hash, presented)) found = entry.actor;
      return found;
    },
  };
}
