// GET /api/audit: a record's audit trail, newest first, for actors who may read the record, without
// the changes of fields they may not read (audit.ts readerView).

import { Router } from 'express';
import { type AuditLog, readerView } from '../data/audit.ts';
import type { EntityStore } from '../data/entity-store.ts';
import { parseListQuery } from './list-query.ts';
import { AppError } from '../core/errors.ts';
import { requestContext } from './context.ts';
import { matched } from './pipeline.ts';
import { sendJson } from './respond.ts';

export function auditRoutes(audit: AuditLog, stores: ReadonlyMap<string, EntityStore>): Router {
  const router = Router();
  router.get('/api/audit', matched('audit.list'), async (req, res) => {
    const { entity, recordId, ...paging } = req.query as Record<string, unknown>;
    if (typeof entity !== 'string' || typeof recordId !== 'string') {
      throw new AppError('INVALID_QUERY', 'entity and recordId are required', {
        details: [{ field: typeof entity !== 'string' ? 'entity' : 'recordId', code: 'REQUIRED', message: 'required' }],
      });
    }
    const store = stores.get(entity);
    if (!store)
      throw new AppError('INVALID_QUERY', `unknown entity "${entity}"`, {
        details: [{ field: 'entity', code: 'UNKNOWN_ENTITY', message: `no entity ${entity}` }],
      });
    const ctx = requestContext(req, { mutation: false });
    // The trail is as private as the record: the actor must be able to read it.
    const { limit, offset } = parseListQuery(paging);
    const { record, page } = await store.db.read(
      (function* () {
        const record = yield* store.load(ctx, recordId, store.access.filter(ctx.actor, 'read'));
        return { record, page: yield* audit.list(entity, recordId, limit, offset) };
      })(),
      req.trace,
    );
    // Values of fields the actor may not read stay out of the trail, as they stay out of the record.
    const hidden = (values: Record<string, unknown>) => store.access.hiddenFields(ctx.actor, values);
    const items = page.items.map((item) => readerView(item, record, hidden));
    sendJson(res, 200, { items, limit, offset, hasMore: page.hasMore });
  });
  return router;
}
