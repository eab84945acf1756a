// A transactional workflow runs its steps that act outside the database (notify, email, webhook,
// plugin, service, delay) after the commit: a request sent or a message delivered cannot be rolled back.
// Their results (assignTo) therefore do not exist yet while the transaction runs, so a step
// that runs inside it (query, command, a condition's `if`, a loop's `items`) may not read them:
// the job would always fail there (WORKFLOW_TEMPLATE_UNRESOLVED) and roll back. Refused here.

import type { CompileContext } from '../../context.ts';
import type { Blueprint, WorkflowStep } from '../../model/types.ts';
import type { KeyPath } from '../../parse/locate.ts';

/** Step types that run after the commit of a transactional workflow (as runtime-lib/workflows/engine.ts). */
const AFTER_COMMIT = new Set(['notify', 'email', 'webhook', 'plugin', 'service', 'delay']);

export function transactionalSteps(ctx: CompileContext, bp: Blueprint): void {
  for (const wf of bp.workflows) {
    if (!wf.transactional) continue;
    const later = new Map<string, string>();
    collectLater(wf.steps, later);
    if (later.size) checkInTransaction(ctx, wf.path, wf.steps, later);
  }
}

/** assignTo names of after-commit steps, anywhere in the workflow, with the step type that sets each. */
function collectLater(steps: WorkflowStep[], later: Map<string, string>): void {
  for (const step of steps) {
    if (AFTER_COMMIT.has(step.type) && typeof step.spec.assignTo === 'string') later.set(step.spec.assignTo, step.type);
    for (const branch of Object.values(step.branches)) collectLater(branch, later);
  }
}

function checkInTransaction(
  ctx: CompileContext,
  fallback: KeyPath,
  steps: WorkflowStep[],
  later: Map<string, string>,
): void {
  for (const step of steps) {
    if (AFTER_COMMIT.has(step.type)) continue;
    const at = ctx.declaredAt.get(step) ?? fallback;
    // What the transaction reads: every value of a database step, the paths of `if`, a loop's items.
    const read: Array<[key: string, value: unknown]> =
      step.type === 'condition'
        ? [['if', pathsOf(step.spec.if)]]
        : step.type === 'loop'
          ? [['items', step.spec.items]]
          : Object.entries(step.spec).filter(([key]) => !['type', 'name', 'assignTo'].includes(key));
    for (const [key, value] of read) {
      for (const name of variablesRead(value)) {
        const type = later.get(name);
        if (type === undefined) continue;
        ctx.report(
          'RESULT_AFTER_COMMIT',
          [...at, key],
          `variables.${name} is the result of a ${type} step, which runs after this transactional workflow commits: ` +
            `it does not exist while this step runs`,
          {
            hint:
              'read it in a step that runs after the commit (notify, email, webhook, plugin), ' +
              'or make the workflow not transactional',
          },
        );
      }
    }
    for (const branch of Object.values(step.branches)) checkInTransaction(ctx, at, branch, later);
  }
}

/** The `<name>` of every `variables.<name>` in the strings inside `value`. */
function variablesRead(value: unknown): Set<string> {
  const names = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') for (const m of v.matchAll(/\bvariables\.([A-Za-z0-9_$-]+)/g)) names.add(m[1]);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(visit);
  };
  visit(value);
  return names;
}

/** The context paths of a condition's `if`, inside `$and` / `$or` included. */
function pathsOf(condition: unknown): string[] {
  if (Array.isArray(condition)) return condition.flatMap(pathsOf);
  if (condition === null || typeof condition !== 'object') return [];
  return Object.entries(condition).flatMap(([key, value]) =>
    key === '$and' || key === '$or' ? pathsOf(value) : [key],
  );
}
