// Cross-reference rules of workflows, pages and notifications.

import type { CompileContext } from '../../context.ts';
import type { Blueprint } from '../../model/types.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { entityNamed, fieldNamed, names, unknownEntity, unknownField } from './common.ts';

export function workflowReferences(ctx: CompileContext, bp: Blueprint): void {
  const adapters = bp.notifications.adapters.map((a) => a.name);
  if (bp.notifications.default && !adapters.includes(bp.notifications.default)) {
    ctx.report('UNKNOWN_ADAPTER', ['notifications', 'default'], `notification adapter "${bp.notifications.default}" is not declared`, {
      hint: didYouMean(bp.notifications.default, adapters),
    });
  }
  for (const wf of bp.workflows) {
    if (wf.trigger.kind === 'entity' && !entityNamed(bp, wf.trigger.entity)) unknownEntity(ctx, bp, [...wf.path, 'trigger', 'entity'], wf.trigger.entity);
    for (const step of wf.steps) {
      const at = ctx.declaredAt.get(step) ?? wf.path;
      const s = step.spec;
      if (step.type === 'query') {
        const entity = typeof s.entity === 'string' ? entityNamed(bp, s.entity) : undefined;
        if (typeof s.entity !== 'string') ctx.report('MISSING_KEY', [...at, 'entity'], 'a query step needs entity');
        else if (!entity) unknownEntity(ctx, bp, [...at, 'entity'], s.entity);
        if (s.action === undefined) ctx.report('MISSING_KEY', [...at, 'action'], 'a query step needs action (create, update, delete or find)');
        for (const key of ['where', 'data'] as const) {
          const table = s[key];
          if (!entity || !isTable(table)) continue;
          for (const name of Object.keys(table)) if (!fieldNamed(entity, name)) unknownField(ctx, entity, [...at, key, name], name);
        }
      } else if (step.type === 'command') {
        if (typeof s.command !== 'string') ctx.report('MISSING_KEY', [...at, 'command'], 'a command step needs command');
        else if (!bp.commands.some((c) => c.name === s.command)) {
          ctx.report('UNKNOWN_COMMAND', [...at, 'command'], `command "${s.command}" does not exist`, { hint: didYouMean(s.command, names(bp.commands)) });
        }
      } else if (step.type === 'notify') {
        const adapter = typeof s.adapter === 'string' ? s.adapter : bp.notifications.default;
        if (adapter === undefined) ctx.report('UNKNOWN_ADAPTER', at, 'a notify step needs adapter, or [notifications] needs default');
        else if (!adapters.includes(adapter)) {
          ctx.report('UNKNOWN_ADAPTER', [...at, typeof s.adapter === 'string' ? 'adapter' : 'type'], `notification adapter "${adapter}" is not declared`, {
            hint: didYouMean(adapter, adapters) ?? 'declare it under [[notifications.adapters]]',
          });
        }
      } else if (step.type === 'webhook' && typeof s.url !== 'string') {
        ctx.report('MISSING_KEY', [...at, 'url'], 'a webhook step needs url');
      }
    }
  }
}

export function pageReferences(ctx: CompileContext, bp: Blueprint): void {
  for (const page of bp.pages) {
    if (!page.route.startsWith('/')) ctx.report('INVALID_PAGE_PATH', page.path, `page path "${page.route}" must start with "/"`);
    for (const q of page.queries) {
      const at: KeyPath = [...page.path, 'query', q.name];
      const entity = entityNamed(bp, q.entity);
      if (!entity) {
        unknownEntity(ctx, bp, [...at, 'entity'], q.entity);
        continue;
      }
      for (const key of Object.keys(q.where)) if (!fieldNamed(entity, key)) unknownField(ctx, entity, [...at, 'where', key], key);
      for (const o of q.orderBy) if (!fieldNamed(entity, o.field)) unknownField(ctx, entity, [...at, 'orderBy', o.field], o.field);
      q.include.forEach((rel, i) => {
        if (!entity.relations.some((r) => r.name === rel)) {
          ctx.report('UNKNOWN_RELATION', [...at, 'include', i], `entity "${entity.name}" has no relation "${rel}"`, { hint: didYouMean(rel, names(entity.relations)) });
        }
      });
    }
    const formEntity = page.form && entityNamed(bp, page.form.entity);
    if (page.form && !formEntity) unknownEntity(ctx, bp, [...page.path, 'form', 'entity'], page.form.entity);
    page.form?.fields.forEach((f, i) => {
      if (formEntity && typeof f.name === 'string' && !fieldNamed(formEntity, f.name)) {
        unknownField(ctx, formEntity, [...page.path, 'form', 'fields', i, 'name'], f.name);
      }
    });
    const primary = page.queries[0] && entityNamed(bp, page.queries[0].entity);
    if (page.actionBar && primary && !fieldNamed(primary, page.actionBar.statusField)) {
      unknownField(ctx, primary, [...page.path, 'actionBar', 'statusField'], page.actionBar.statusField);
    }
  }
}
