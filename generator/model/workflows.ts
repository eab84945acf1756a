// How the generated app starts workflows, as the generator's stages ask it: the emitters (what to
// generate, document and describe in OpenAPI) and the validator (what would clash with jobs).

import type { Blueprint, Workflow } from './types.ts';

/** Started by hand: a skill action submits it as a job (202, GET /api/jobs/<id>). */
export function startedByHand(workflow: Workflow): boolean {
  return workflow.trigger.kind === 'manual';
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
