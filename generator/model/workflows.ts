// How the generated app starts workflows, as the generator's stages ask it: the emitters (what to
// generate, document and describe in OpenAPI) and the validator (what would clash with jobs).

import type { Blueprint, SkillAction, Workflow, WorkflowStep } from './types.ts';

/**
 * Started by hand: a skill action submits it as a job (202, GET /api/jobs/<id>). The app serves the
 * skill actions of every workflow but one its entity events start (runtime/http/skill-routes.ts
 * skillActions): a webhook's or a schedule's workflow may be started by hand too.
 */
export function startedByHand(workflow: Workflow): boolean {
  return workflow.trigger.kind !== 'entity';
}

/** Whether some workflow is started by a delivery to its webhook route (POST /webhooks/...). */
export function hasWebhooks(bp: Blueprint): boolean {
  return bp.workflows.some((w) => w.trigger.kind === 'webhook');
}

/** Whether some workflow runs on a schedule. */
export function hasSchedules(bp: Blueprint): boolean {
  return bp.workflows.some((w) => w.trigger.kind === 'schedule');
}

/** Whether some skill action starts a workflow by hand: the app then serves /api/jobs. */
export function startsJobs(bp: Blueprint): boolean {
  const byHand = new Set(bp.workflows.filter(startedByHand).map((w) => w.name));
  return bp.skills.some((s) => s.actions.some((a) => a.workflow !== undefined && byHand.has(a.workflow)));
}

/**
 * The context paths at which a job submitted by a skill action finds the action's body
 * (runtime/workflows/engine.ts runContext: `variables.data` and `trigger.data`, where `payload` and
 * `body` are both the checked body).
 */
const BODY_PATH = /^(?:variables|trigger)\.data\.(?:payload|body)\.([^.]+)/;

/** `{{ path }}`, as runtime/workflows/templates.ts reads it. */
const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;

/**
 * The body keys a workflow cannot run without: every key a `{{ template }}` of its steps reads (a
 * template that does not resolve fails its step), and the bare path of a loop's `items`. A
 * condition's `if` and the precondition read paths too, but a path that does not resolve holds
 * nothing there, so a key they alone read may be left out. Every branch counts, as any may run.
 */
export function bodyKeysRead(workflow: Workflow): string[] {
  const keys = new Set<string>();
  const path = (text: string) => {
    const key = BODY_PATH.exec(text.trim())?.[1];
    if (key !== undefined) keys.add(key);
  };
  const strings = (value: unknown): void => {
    if (typeof value === 'string') for (const m of value.matchAll(TEMPLATE)) path(m[1] as string);
    else if (Array.isArray(value)) value.forEach(strings);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(strings);
  };
  const steps = (list: readonly WorkflowStep[]): void => {
    for (const step of list) {
      for (const [name, value] of Object.entries(step.spec)) {
        if (name === 'then' || name === 'else' || name === 'do' || (step.type === 'condition' && name === 'if'))
          continue;
        if (step.type === 'loop' && name === 'items' && typeof value === 'string' && !value.includes('{{')) path(value);
        else strings(value);
      }
      for (const branch of Object.values(step.branches)) steps(branch);
    }
  };
  steps(workflow.steps);
  return [...keys].sort();
}

/**
 * The declared body keys a workflow action must be sent with (non-null): those its workflow reads
 * (bodyKeysRead). A key it reads but does not declare cannot be sent at all, and is not listed.
 */
export function requiredBodyKeys(bp: Blueprint, action: SkillAction): string[] {
  const workflow = bp.workflows.find((w) => w.name === action.workflow);
  // A GET action takes no body (runtime/http/skill-routes.ts hasBody).
  if (!workflow || !startedByHand(workflow) || action.method === 'GET') return [];
  return bodyKeysRead(workflow).filter((key) => Object.hasOwn(action.body, key));
}
