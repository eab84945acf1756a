// GET /api/audit: a record's audit trail, newest first, for actors who may read the record.

import { Router } from 'express';
import type { AuditLog } from '../data/audit.ts';
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
    const page = await store.db.read(
      (function* () {
        yield* store.load(ctx, recordId, store.access.filter(ctx.actor, 'read'));
        return yield* audit.list(entity, recordId, limit, offset);
      })(),
      req.trace,
    );
    sendJson(res, 200, { items: page.items, limit, offset, hasMore: page.hasMore });
  });
  return router;
}
