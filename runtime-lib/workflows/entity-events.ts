// Workflows triggered by entity events: a record created, updated or deleted by any
// path (the entity routes, a command, a skill action, a workflow step) stores a job for each
// workflow whose trigger names that entity and event and whose `condition` on `before.*` and
// `after.*` holds. The job is inserted in the write's own transaction, so it exists exactly when
// the change committed: it fires once, on whichever instance made the change, and a rolled-back
// write starts nothing. It runs as the actor who made the change.
//
// Workflows whose jobs make changes that start workflows again are stopped at MAX_WORKFLOW_DEPTH:
// the write that would start one more fails with WORKFLOW_DEPTH_EXCEEDED, naming the chain.

import { AppError } from '../core/errors.ts';
import type { Work } from '../data/database.ts';
import type { ChangeHook, RecordChange, RequestContext } from '../data/entity-store.ts';
import { conditionHolds, runContext, type WorkflowSpec } from './engine.ts';
import { insertJob } from './jobs.ts';
import { valueHolds } from './step-condition.ts';

export const MAX_WORKFLOW_DEPTH = 5;

/** Who "owns" a job that no request submitted: nobody can poll it. */
const EVENT_OWNER = 'system:entity-events';

/** The hook for entity stores, or undefined when no workflow is triggered by an entity event. */
export function entityEventHook(workflows: readonly WorkflowSpec[]): ChangeHook | undefined {
  const byEvent = new Map<string, WorkflowSpec[]>();
  for (const spec of workflows) {
    const trigger = spec.trigger;
    if (trigger?.kind !== 'entity') continue;
    const key = `${trigger.entity}.${trigger.event}`;
    byEvent.set(key, [...(byEvent.get(key) ?? []), spec]);
  }
  if (byEvent.size === 0) return undefined;
  const mayAct = (entity: string, set: Readonly<Record<string, unknown>>) =>
    (byEvent.get(`${entity}.update`) ?? []).some(
      (spec) => spec.trigger?.kind !== 'entity' || mightHold(spec.trigger.condition, entity, set),
    );
  return Object.assign(
    function* (ctx: RequestContext, change: RecordChange): Work<void> {
      // The condition reads before.* and after.*; a precondition, the run's context (trigger.after.*).
      const data = eventData(change);
      const started = (byEvent.get(`${change.entity}.${change.event}`) ?? []).filter(
        (spec) =>
          conditionHolds(spec.trigger?.kind === 'entity' ? spec.trigger.condition : {}, data) &&
          conditionHolds(spec.precondition ?? {}, runContext({ kind: 'entity', ...data })),
      );
      const chain = ctx.workflowChain ?? [];
      for (const spec of started) {
        if (chain.length >= MAX_WORKFLOW_DEPTH) {
          throw new AppError(
            'WORKFLOW_DEPTH_EXCEEDED',
            `entity events started ${[...chain, spec.name].join(' -> ')}: ` +
              `more than ${MAX_WORKFLOW_DEPTH} workflows in a chain`,
          );
        }
        yield* insertJob(spec.name, EVENT_OWNER, ctx.actor, { kind: 'entity', ...data, chain }, ctx.trace);
      }
    },
    { mayAct },
  );
}

/**
 * Whether a trigger's `condition` might hold for an update of `entity` that sets the fields of
 * `set` and leaves every other field as it was: false only when it cannot, whatever the record
 * held. It cannot when an `after.*` path of a field set does not hold its value, or when a field
 * left alone would need two plain values that differ (`before.status` in_progress, `after.status`
 * resolved: a change that leaves `status` alone never makes it one).
 */
function mightHold(
  condition: Readonly<Record<string, unknown>>,
  entity: string,
  set: Readonly<Record<string, unknown>>,
): boolean {
  const needs = new Map<string, Set<string>>();
  for (const [path, expected] of Object.entries(condition)) {
    if (path === 'entity' || path === 'event') {
      if (!valueHolds(path === 'entity' ? entity : 'update', expected)) return false;
      continue;
    }
    const match = /^(before|after)\.([^.]+)$/.exec(path);
    if (!match) continue;
    const [, side, field] = match;
    if (Object.prototype.hasOwnProperty.call(set, field)) {
      if (side === 'after' && !valueHolds(set[field], expected)) return false;
    } else if (typeof expected === 'string' || typeof expected === 'number' || typeof expected === 'boolean') {
      // `same` compares scalars as text: a value equal to two expected values makes them one text.
      needs.set(field, (needs.get(field) ?? new Set()).add(String(expected)));
    }
  }
  return [...needs.values()].every((values) => values.size === 1);
}

function eventData(change: RecordChange): Record<string, unknown> {
  return { entity: change.entity, event: change.event, before: change.before, after: change.after };
}
