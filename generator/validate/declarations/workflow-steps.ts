// Rules on workflow steps, top-level and nested (a condition's `then` / `else`, a loop's `do`):
// the keys each step type reads (Zebric 0.6's executor), the ones it needs, and the two
// spellings of one key. Zebric passes unknown step keys through and ignores them; here such a
// key is a warning with a "did you mean" among the keys of the step's own type.

import type { CompileContext } from '../../context.ts';
import { list, type Raw } from '../../model/raw.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { STEP_TYPES } from '../schema.ts';
import { checkConditionOperators } from './condition-operators.ts';

type StepType = (typeof STEP_TYPES)[number];

/** Keys every step may carry: `assignTo` stores its result in the run's variables. */
const COMMON = ['type', 'name', 'assignTo'];

const STEP_KEYS: Record<StepType, { keys: string[]; required: Array<[key: string, message?: string]> }> = {
  query: {
    keys: ['entity', 'action', 'where', 'data'],
    required: [['entity'], ['action', 'a query step needs action (create, update, delete or find)']],
  },
  command: { keys: ['command', 'recordId', 'input'], required: [['command'], ['recordId']] },
  notify: {
    keys: ['adapter', 'channel', 'to', 'subject', 'body', 'message', 'template', 'params', 'metadata'],
    required: [],
  },
  webhook: { keys: ['url', 'method', 'headers', 'body', 'payload'], required: [['url']] },
  email: { keys: ['to', 'subject', 'body', 'template'], required: [['to'], ['subject']] },
  plugin: { keys: ['plugin', 'action_name', 'params'], required: [['plugin'], ['action_name']] },
  service: { keys: ['service', 'operation', 'params'], required: [['service'], ['operation']] },
  condition: { keys: ['if', 'then', 'else'], required: [['if']] },
  loop: { keys: ['items', 'do'], required: [['items'], ['do']] },
  delay: { keys: ['duration'], required: [['duration']] },
};

/** Keys that are two spellings of one value: the first is bp's, the second Zebric's or a common alias. */
const SPELLINGS: Partial<Record<StepType, [string, string]>> = {
  // Zebric's webhook step sends `payload`; bp's format contract calls it `body`.
  webhook: ['body', 'payload'],
  // Zebric's notify step has no `message` (it is dropped there); read here as the body it means.
  notify: ['body', 'message'],
};

/** "a notify step", "an email step". */
const aStep = (type: StepType): string => `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type} step`;

const isStepType = (type: unknown): type is StepType =>
  typeof type === 'string' && (STEP_TYPES as readonly string[]).includes(type);

export function checkSteps(ctx: CompileContext, at: KeyPath, steps: unknown): void {
  list(steps).forEach((step, i) => {
    if (isTable(step)) checkStep(ctx, [...at, i], step);
  });
}

function checkStep(ctx: CompileContext, at: KeyPath, step: Raw): void {
  // A missing or unknown type has its shape error; its keys cannot be judged.
  if (!isStepType(step.type)) return;
  const type = step.type;
  const { keys, required } = STEP_KEYS[type];
  const own = [...COMMON, ...keys];
  for (const key of Object.keys(step)) {
    if (own.includes(key)) continue;
    const ofOther = STEP_TYPES.some((t) => STEP_KEYS[t].keys.includes(key));
    ctx.report(
      'UNKNOWN_KEY',
      [...at, key],
      ofOther ? `"${key}" is not a key of ${aStep(type)} and is ignored` : `unknown key "${key}" is ignored`,
      {
        severity: 'warning',
        hint: didYouMean(key, own),
      },
    );
  }
  for (const [key, message] of required) {
    if (step[key] === undefined) ctx.report('MISSING_KEY', [...at, key], message ?? `${aStep(type)} needs ${key}`);
  }
  const spellings = SPELLINGS[type];
  if (spellings && step[spellings[0]] !== undefined && step[spellings[1]] !== undefined) {
    ctx.report(
      'CONFLICTING_OPTIONS',
      [...at, spellings[1]],
      `${aStep(type)} takes ${spellings[0]} or ${spellings[1]}, not both`,
      {
        hint: `${spellings[1]} is another spelling of ${spellings[0]}; keep one`,
      },
    );
  }
  if (type === 'condition') checkConditionOperators(ctx, [...at, 'if'], step.if, true);
  for (const branch of ['then', 'else', 'do'] as const) {
    if (keys.includes(branch)) checkSteps(ctx, [...at, branch], step[branch]);
  }
}
