// Cross-reference rules of workflows, pages and notifications.

import type { CompileContext } from '../../context.ts';
import { namedSections, table } from '../../model/raw.ts';
import type { Blueprint, WorkflowStep } from '../../model/types.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { entityNamed, fieldNamed, names, unknownEntity, unknownField } from './common.ts';
import { actionBarReferences, boardReferences, formReferences, routeLinks, widgetReferences } from './page-parts.ts';

export function workflowReferences(ctx: CompileContext, bp: Blueprint): void {
  const adapters = bp.notifications.adapters.map((a) => a.name);
  if (bp.notifications.default && !adapters.includes(bp.notifications.default)) {
    ctx.report(
      'UNKNOWN_ADAPTER',
      ['notifications', 'default'],
      `notification adapter "${bp.notifications.default}" is not declared`,
      {
        hint: didYouMean(bp.notifications.default, adapters),
      },
    );
  }
  // Services are not in the model yet (nothing generates them); their declarations are.
  const services = new Map(
    namedSections(ctx.parsed, 'service').map((s) => [s.name, Object.keys(table(s.value.operations))]),
  );
  const refs: StepRefs = { bp, adapters, services };
  for (const wf of bp.workflows) {
    if (wf.trigger.kind === 'entity' && !entityNamed(bp, wf.trigger.entity))
      unknownEntity(ctx, bp, [...wf.path, 'trigger', 'entity'], wf.trigger.entity);
    stepReferences(ctx, refs, wf.path, wf.steps);
  }
}

interface StepRefs {
  bp: Blueprint;
  adapters: string[];
  /** Declared services and their operation names. */
  services: Map<string, string[]>;
}

function stepReferences(ctx: CompileContext, refs: StepRefs, fallback: KeyPath, steps: WorkflowStep[]): void {
  const { bp, adapters, services } = refs;
  for (const step of steps) {
    const at = ctx.declaredAt.get(step) ?? fallback;
    const s = step.spec;
    if (step.type === 'query' && typeof s.entity === 'string') {
      const entity = entityNamed(bp, s.entity);
      if (!entity) unknownEntity(ctx, bp, [...at, 'entity'], s.entity);
      for (const key of ['where', 'data'] as const) {
        const values = s[key];
        if (!entity || !isTable(values)) continue;
        for (const name of Object.keys(values))
          if (!fieldNamed(entity, name)) unknownField(ctx, entity, [...at, key, name], name);
      }
    } else if (
      step.type === 'command' &&
      typeof s.command === 'string' &&
      !bp.commands.some((c) => c.name === s.command)
    ) {
      ctx.report('UNKNOWN_COMMAND', [...at, 'command'], `command "${s.command}" does not exist`, {
        hint: didYouMean(s.command, names(bp.commands)),
      });
    } else if (step.type === 'notify') {
      const adapter = typeof s.adapter === 'string' ? s.adapter : bp.notifications.default;
      if (adapter === undefined)
        ctx.report('UNKNOWN_ADAPTER', at, 'a notify step needs adapter, or [notifications] needs default');
      else if (!adapters.includes(adapter)) {
        ctx.report(
          'UNKNOWN_ADAPTER',
          [...at, typeof s.adapter === 'string' ? 'adapter' : 'type'],
          `notification adapter "${adapter}" is not declared`,
          {
            hint: didYouMean(adapter, adapters) ?? 'declare it under [[notifications.adapters]]',
          },
        );
      }
    } else if (step.type === 'service' && typeof s.service === 'string') {
      const operations = services.get(s.service);
      if (!operations) {
        ctx.report('UNKNOWN_SERVICE', [...at, 'service'], `service "${s.service}" is not declared`, {
          hint: didYouMean(s.service, [...services.keys()]) ?? 'declare it under [service.<name>]',
        });
      } else if (typeof s.operation === 'string' && !operations.includes(s.operation)) {
        ctx.report(
          'UNKNOWN_SERVICE',
          [...at, 'operation'],
          `service "${s.service}" has no operation "${s.operation}"`,
          {
            hint: didYouMean(s.operation, operations),
          },
        );
      }
    }
    for (const branch of Object.values(step.branches)) stepReferences(ctx, refs, at, branch);
  }
}

export function pageReferences(ctx: CompileContext, bp: Blueprint): void {
  for (const page of bp.pages) {
    if (!page.route.startsWith('/'))
      ctx.report('INVALID_PAGE_PATH', page.path, `page path "${page.route}" must start with "/"`);
    for (const q of page.queries) {
      const at: KeyPath = [...page.path, 'query', q.name];
      const entity = entityNamed(bp, q.entity);
      if (!entity) {
        unknownEntity(ctx, bp, [...at, 'entity'], q.entity);
        continue;
      }
      for (const key of Object.keys(q.where))
        if (!fieldNamed(entity, key)) unknownField(ctx, entity, [...at, 'where', key], key);
      for (const o of q.orderBy)
        if (!fieldNamed(entity, o.field)) unknownField(ctx, entity, [...at, 'orderBy', o.field], o.field);
      q.include.forEach((rel, i) => {
        if (!entity.relations.some((r) => r.name === rel)) {
          ctx.report('UNKNOWN_RELATION', [...at, 'include', i], `entity "${entity.name}" has no relation "${rel}"`, {
            hint: didYouMean(rel, names(entity.relations)),
          });
        }
      });
    }
    formReferences(ctx, bp, page);
    const primary = page.queries[0] && entityNamed(bp, page.queries[0].entity);
    const statusField = page.actionBar?.statusField;
    if (statusField !== undefined && primary && !fieldNamed(primary, statusField)) {
      unknownField(ctx, primary, [...page.path, 'actionBar', 'statusField'], statusField);
    }
    actionBarReferences(ctx, bp, page);
    boardReferences(ctx, bp, page);
    widgetReferences(ctx, bp, page);
  }
  routeLinks(ctx, bp);
}
