// src/pages.ts: the pages the app serves, as specs for runtime/pages/page-routes.ts. Only where
// the blueprint has a page the app serves (generator/model/pages.ts).

import { expressPath, pageServed, pageTitle } from '../model/pages.ts';
import { matchRelations, refRelations, relationInclude } from '../model/relations.ts';
import { pageForm } from './page-forms.ts';
import type { Blueprint, Entity, Page } from '../model/types.ts';
import { boardParts, servedLayout, statusField, widgetQueries } from './page-boards.ts';
import { slotCalls, templateCall } from './page-templates.ts';
import { render } from './templates.ts';
import { nonEmpty, tsLiteral } from './ts-literal.ts';

export function servedPages(bp: Blueprint): Page[] {
  return bp.pages.filter(pageServed);
}

export function emitPages(bp: Blueprint): string | undefined {
  const pages = servedPages(bp);
  if (pages.length === 0) return undefined;
  const relations = refRelations(bp);
  const matches = matchRelations(bp);
  const entity = (name: string) => bp.entities.find((e) => e.name === name) as Entity;
  const specs = pages.map((page) => {
    const first = page.queries[0];
    const status = first && statusField(page, entity(first.entity));
    return {
      path: expressPath(page.route),
      title: pageTitle(page, bp.project.name),
      auth: page.auth,
      layout: servedLayout(page),
      queries: widgetQueries(page).map((q) => ({
        name: q.name,
        entity: q.entity,
        where: nonEmpty(Object.entries(q.where).map(([field, value]) => ({ field, value }))),
        orderBy: nonEmpty(q.orderBy),
        limit: q.limit,
        offset: q.offset,
        include: nonEmpty(
          q.include.flatMap((name) => {
            const include = relationInclude(entity(q.entity), name, relations, matches);
            return include ? [include] : [];
          }),
        ),
      })),
      // A detail page offers the commands of its record's entity (spec 4.6).
      commands:
        page.layout === 'detail' && first
          ? nonEmpty(
              bp.commands
                .filter((c) => c.entity === first.entity)
                .map((c) => ({
                  name: c.name,
                  operationId: c.operationId,
                  label: c.label,
                  style: c.style,
                  confirm: c.confirm,
                })),
            )
          : undefined,
      status: status && { field: status, label: page.actionBar?.statusLabel },
      form: pageForm(bp, page),
      template: page.template && templateCall(page.template),
      slots: slotCalls(page.layoutSlots),
      ...boardParts(page),
    };
  });
  return render('app/src/pages.ts.hbs', {
    pages: tsLiteral(specs, { lead: 'export const PAGES: PageSpec[] = '.length, trail: 1 }),
    templates: pages.some((p) => p.template !== undefined || Object.keys(p.layoutSlots).length > 0),
  });
}
