// Rules in generated code (entity and field access, command policy and availableWhen,
// [auth.permissions] conditions) are written as the blueprint wrote them, inside a call to the
// runtime's `rule()` (runtime/rules/conditions.ts), which parses each once when its module loads.
// A reviewer reads the rule as written; what runs is derived from it, so the two cannot drift.

import type { Rule } from '../model/types.ts';
import { call, type Call } from './ts-literal.ts';

export function ruleCall(rule: Rule): Call {
  return call('rule', rule.source);
}

/** A set of rules keyed by action (or read/write), each as its `rule(...)` call. */
export function ruleCalls<K extends string>(rules: Partial<Record<K, Rule>>): Partial<Record<K, Call>> {
  const out: Partial<Record<K, Call>> = {};
  for (const [key, rule] of Object.entries(rules) as Array<[K, Rule | undefined]>) {
    if (rule) out[key] = ruleCall(rule);
  }
  return out;
}
