// The actor as blueprints may read it: `actor.<key>` in expressions and mutations,
// `$currentUser.<key>` in condition tables. One list, kept in step with runtime-lib/core/actor.ts
// (add a key here when the actor gains one), and one check, used by conditions, policies,
// availableWhen, permission conditions and mutations alike.

import type { Blueprint } from '../../model/types.ts';
import { closest, didYouMean } from '../../suggest.ts';

export const ACTOR_KEYS: readonly string[] = [
  'id',
  'effectiveId',
  'type',
  'kind',
  'credentialId',
  'roles',
  'role',
  'delegatedBy',
  'email',
  'scopes',
  'displayName',
  'metadata',
];

/** What every actor's metadata may hold: a person's e-mail, name and role (an API key's name and role). */
const BASE_METADATA: readonly string[] = ['email', 'name', 'role'];

/**
 * Keys of `actor.metadata`: the base ones and, when people are the records of `User`, every field
 * of that entity (the record is spread into a person's metadata).
 */
export function metadataKeys(bp: Blueprint): string[] {
  const user = bp.auth.userRecords && bp.entities.find((e) => e.name === bp.auth.userRecords?.entity);
  return [...new Set([...BASE_METADATA, ...(user?.fields.map((f) => f.name) ?? [])])];
}

export interface ActorKeyProblem {
  /** Which key of the path is wrong. */
  index: number;
  message: string;
  hint: string;
}

/**
 * Why `keys` (after `actor.`, or the one key of `$currentUser.`) does not name part of the actor.
 * `$currentUser.<key>` reads the actor's own key, else its metadata's, so both lists count there;
 * `actor.metadata` alone names no value a mutation could write.
 */
export function actorKeyProblem(
  bp: Blueprint,
  keys: readonly string[],
  form: 'expression' | 'currentUser' | 'mutation',
): ActorKeyProblem | undefined {
  const [key, inner] = keys;
  if (key === undefined) return undefined;
  const metadata = metadataKeys(bp);
  if (form === 'currentUser') {
    const known = [...ACTOR_KEYS, ...metadata.filter((k) => !ACTOR_KEYS.includes(k))];
    if (known.includes(key)) return undefined;
    return { index: 0, message: `the actor has no "${key}"`, hint: hintFor(key, known) };
  }
  if (!ACTOR_KEYS.includes(key)) {
    // `actor.name` is `actor.metadata.name`: only `$currentUser.<key>` falls back to the metadata.
    const own = closest(key, ACTOR_KEYS);
    const nested = own === undefined ? closest(key, metadata) : undefined;
    const hint =
      own !== undefined
        ? `did you mean "${own}"?`
        : nested !== undefined
          ? `did you mean "metadata.${nested}"?`
          : hintFor(key, ACTOR_KEYS);
    return { index: 0, message: `the actor has no "${key}"`, hint };
  }
  if (key !== 'metadata') return undefined;
  if (inner === undefined) {
    if (form !== 'mutation') return undefined;
    return {
      index: 0,
      message: 'actor.metadata is a table: name one of its keys',
      hint: `metadata keys: ${metadata.join(', ')}`,
    };
  }
  if (metadata.includes(inner)) return undefined;
  return {
    index: 1,
    message: `the actor's metadata has no "${inner}"`,
    hint: hintFor(inner, metadata, 'metadata keys'),
  };
}

function hintFor(key: string, known: readonly string[], what = 'actor keys'): string {
  return didYouMean(key, known) ?? `${what}: ${known.join(', ')}`;
}
