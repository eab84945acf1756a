// src/workflows.ts: the blueprint's workflows, as specs for runtime/workflows/engine.ts, the
// notification adapters their notify steps use, and the services their service steps call.

import type { Blueprint } from '../model/types.ts';
import { render } from './templates.ts';
import { code, nonEmpty, tsLiteral } from './ts-literal.ts';

/**
 * What src/workflows.ts exports for the blueprint: its workflows, and the notification adapters and
 * services only where it declares some (the app reads their absence as none).
 */
export function workflowExports(bp: Blueprint): { notifications: boolean; services: boolean } {
  const notifications = bp.notifications.default !== undefined || bp.notifications.adapters.length > 0;
  return { notifications, services: bp.services.length > 0 };
}

/** The adapter types runtime/workflows builds in beyond console: each has a library only its apps depend on. */
export const BUILT_IN_ADAPTERS = ['email', 'slack'] as const;

/** The built-in adapter types the blueprint's workflows may send through, in a fixed order. */
export function builtInAdapters(bp: Blueprint): Array<(typeof BUILT_IN_ADAPTERS)[number]> {
  if (bp.workflows.length === 0) return [];
  return BUILT_IN_ADAPTERS.filter((kind) => bp.notifications.adapters.some((a) => a.type === kind));
}

export function emitWorkflows(bp: Blueprint): string {
  const workflows = bp.workflows.map((w) => ({
    name: w.name,
    description: w.description,
    trigger: w.trigger,
    // Empty, it holds for every run: the runtime reads a missing one so.
    precondition: nonEmpty(w.precondition),
    transactional: w.transactional,
    retries: w.retries,
    maxConcurrent: w.maxConcurrent,
    steps: w.steps.map((s) => s.spec),
  }));
  const kinds = builtInAdapters(bp);
  const notifications = {
    default: bp.notifications.default,
    adapters: nonEmpty(
      bp.notifications.adapters.map((a) => ({ name: a.name, type: a.type, config: nonEmpty(a.config) })),
    ),
    kinds: nonEmpty(Object.fromEntries(kinds.map((kind) => [kind, code(`${kind}Adapter`)]))),
  };
  const services = bp.services.map((s) => ({
    name: s.name,
    operations: Object.fromEntries(
      s.operations.map((op) => [op.name, { input: op.input, ...(op.result ? { result: op.result } : {}) }]),
    ),
  }));
  const exports = workflowExports(bp);
  const lead = 'export const NOTIFICATIONS: NotificationConfig = '.length;
  return render('app/src/workflows.ts.hbs', {
    templateSyntax: '{{ path }}',
    workflows: tsLiteral(workflows, { lead: 'export const WORKFLOWS: WorkflowSpec[] = '.length, trail: 1 }),
    notifications: exports.notifications && tsLiteral(notifications, { lead, trail: 1 }),
    emailAdapter: kinds.includes('email'),
    slackAdapter: kinds.includes('slack'),
    services:
      exports.services && tsLiteral(services, { lead: 'export const SERVICES: ServiceSpec[] = '.length, trail: 1 }),
  });
}
