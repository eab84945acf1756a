// Every name a condition reads, with where it is written: paths of expressions (`record.status`,
// `actor.id`, `input.note`), record paths that are keys of a condition table (`customerId`,
// `"customer.name"`) and `$currentUser.<key>` references on either side.

import { isTable } from '../../parse/load.ts';
import type { Rule } from '../../model/types.ts';
import { expressionPaths } from './expression-paths.ts';

export interface NameRef {
  /** `record`, `actor`, `input` (or another expression root, which names nothing checkable). */
  root: string;
  keys: string[];
  /** From the condition's own path to the string that holds the name. */
  at: (string | number)[];
  /** Whether that string is a key of a condition table or a value. */
  part: 'key' | 'value';
  /** Offset of each key in that string. */
  offsets: number[];
  /** `$currentUser.<key>`, which reads the actor's key or else its metadata's (root `actor`). */
  currentUser?: true;
}

const CURRENT_USER = '$currentUser.';
const SHORTHANDS = new Set(['public', 'authenticated', 'owner']);

/** Names of a condition that parsed (its shape is known to be right). */
export function conditionNames(source: Rule['source']): NameRef[] {
  const out: NameRef[] = [];
  const walk = (value: unknown, at: (string | number)[]): void => {
    if (typeof value === 'string') {
      if (SHORTHANDS.has(value)) return;
      for (const p of expressionPaths(value))
        out.push({ root: p.root, keys: p.keys, at, part: 'value', offsets: p.offsets });
      return;
    }
    if (!isTable(value)) return;
    for (const [key, item] of Object.entries(value)) {
      if ((key === 'or' || key === 'and') && Array.isArray(item)) {
        item.forEach((inner, i) => walk(inner, [...at, key, i]));
        continue;
      }
      out.push(key.startsWith('$') ? currentUser(key, [...at, key], 'key') : recordPath(key, [...at, key]));
      if (typeof item === 'string' && item.startsWith('$')) out.push(currentUser(item, [...at, key], 'value'));
    }
  };
  walk(source, []);
  return out;
}

function currentUser(text: string, at: (string | number)[], part: 'key' | 'value'): NameRef {
  return {
    root: 'actor',
    keys: [text.slice(CURRENT_USER.length)],
    at,
    part,
    offsets: [CURRENT_USER.length],
    currentUser: true,
  };
}

function recordPath(text: string, at: (string | number)[]): NameRef {
  const keys = text.split('.');
  const offsets = keys.map((_, i) => keys.slice(0, i).reduce((sum, k) => sum + k.length + 1, 0));
  return { root: 'record', keys, at, part: 'key', offsets };
}
