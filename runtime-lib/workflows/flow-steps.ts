// The steps that pick which steps run: a condition runs its `then` or its `else`, a loop its `do`
// once per item. Each only says which steps, at which place and in which scope; the engine runs
// them where the flow step stands, in the workflow's transaction or alone as the workflow does.

import { AppError } from '../core/errors.ts';
import type { StepSpec } from './engine.ts';
import { ifHolds } from './step-condition.ts';
import type { Flow, PlacedStep, Scope } from './step-types.ts';
import { define, lookup, resolveTemplates } from './templates.ts';

/** Items one loop step goes over at most. */
export const MAX_LOOP_ITEMS = 1000;

/** A condition step: the branch its `if` picks (none when that branch is absent), in the step's scope. */
export function conditionStep(step: StepSpec, at: string, scope: Scope): Flow {
  const branch = ifHolds(step.if, scope.context) ? 'then' : 'else';
  const steps = stepList(step[branch], branch).map((sub, i) => ({
    step: sub,
    at: `${at}.${branch}.${i}`,
    scope,
    settle: (value: unknown) => scope.assign(sub, value),
  }));
  return { steps, value: undefined };
}

/**
 * A loop step: its body once per item, each iteration in its own scope (see iterations). Its
 * result is every body step's result, item after item (null for none), each in its slot however
 * late it settles (a step run after the commit).
 */
export function loopStep(step: StepSpec, at: string, scope: Scope): Flow {
  const body = stepList(step.do, 'do');
  const results: unknown[] = [];
  const steps: PlacedStep[] = [];
  for (const [index, iteration] of iterations(step, scope).entries()) {
    for (const [j, sub] of body.entries()) {
      const slot = results.push(null) - 1;
      const settle = (value: unknown) => {
        iteration.assign(sub, value);
        results[slot] = value ?? null;
      };
      steps.push({ step: sub, at: `${at}[${index}].do.${j}`, scope: iteration, settle });
    }
  }
  return { steps, value: results };
}

/**
 * One scope per item of a loop step: the run's variables as they are, plus `variables.item` and
 * `variables.index` (Zebric's names). A result stored with assignTo in the body stays in its
 * iteration.
 */
function iterations(step: StepSpec, scope: Scope): Scope[] {
  // `items`: a list, a `{{ path }}` template, or a bare context path.
  const raw = step.items;
  const items =
    typeof raw === 'string' && !raw.includes('{{')
      ? lookup(scope.context, raw.trim())
      : resolveTemplates(raw, scope.context);
  if (!Array.isArray(items)) {
    const what = items === null ? 'null' : typeof items;
    throw new AppError('WORKFLOW_STEP_INVALID', `loop items must be a list; ${JSON.stringify(raw)} is ${what}`);
  }
  if (items.length > MAX_LOOP_ITEMS) {
    throw new AppError(
      'WORKFLOW_LIMIT_EXCEEDED',
      `a loop runs over at most ${MAX_LOOP_ITEMS} items; ${JSON.stringify(raw)} has ${items.length}`,
    );
  }
  const parent = scope.context.variables as Record<string, unknown>;
  return items.map((item: unknown, index) => {
    const variables: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(parent)) define(variables, name, value);
    define(variables, 'item', item ?? null);
    define(variables, 'index', index);
    return { context: { ...scope.context, variables }, assign: (s, value) => define(variables, s.assignTo, value) };
  });
}

/** The steps of a condition's then / else or a loop's do, as the blueprint wrote them. */
function stepList(value: unknown, key: string): readonly StepSpec[] {
  if (value === undefined) return [];
  const valid =
    Array.isArray(value) &&
    value.every((s) => typeof s === 'object' && s !== null && typeof (s as { type?: unknown }).type === 'string');
  if (!valid) throw new AppError('WORKFLOW_STEP_INVALID', `${key} must be a list of steps`);
  return value as StepSpec[];
}
