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
  // `action` is accepted as action_name (4 of 23 public Zebric blueprints spell it so), with a warning.
  plugin: { keys: ['plugin', 'action_name', 'action', 'params'], required: [['plugin']] },
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
  // Zebric's executor reads only action_name; blueprints written for it also say `action`.
  plugin: ['action_name', 'action'],
};

/** The operations of a query step. */
const QUERY_ACTIONS = ['create', 'update', 'delete', 'find'];

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
  if (type === 'query' && typeof step.action === 'string' && !QUERY_ACTIONS.includes(step.action)) {
    ctx.report(
      'INVALID_VALUE',
      [...at, 'action'],
      `must be one of ${QUERY_ACTIONS.map((a) => JSON.stringify(a)).join(', ')}`,
      {
        hint: didYouMean(step.action, QUERY_ACTIONS),
      },
    );
  }
  if (type === 'plugin') checkPluginAction(ctx, at, step);
  if (type === 'condition') checkConditionOperators(ctx, [...at, 'if'], step.if, true);
  for (const branch of ['then', 'else', 'do'] as const) {
    if (keys.includes(branch)) checkSteps(ctx, [...at, branch], step[branch]);
  }
}

/** A plugin step's action: `action_name`, or `action` read as it with a warning naming the preferred key. */
function checkPluginAction(ctx: CompileContext, at: KeyPath, step: Raw): void {
  if (step.action_name === undefined && step.action === undefined) {
    ctx.report('MISSING_KEY', [...at, 'action_name'], 'a plugin step needs action_name');
  } else if (step.action_name === undefined) {
    ctx.report(
      'ALTERNATE_KEY',
      [...at, 'action'],
      'a plugin step names its action with action_name; action is read as it',
      {
        severity: 'warning',
        hint: `write action_name = ${JSON.stringify(step.action)}`,
      },
    );
  }
}
