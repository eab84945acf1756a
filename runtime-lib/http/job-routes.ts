// GET /api/jobs/:id: a workflow job, polled by whoever submitted it. Anyone else, and
// anyone asking for an id that does not exist, hears the same 404.

import { Router } from 'express';
import { isAuthenticated } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import { idempotencyScope } from '../data/idempotency.ts';
import type { JobStore } from '../workflows/jobs.ts';
import { matched } from './pipeline.ts';
import type { ApiRequest } from './request.ts';
import { sendJson } from './respond.ts';

export function jobRouter(jobs: JobStore): Router {
  const router = Router({ caseSensitive: true });
  router.get('/api/jobs/:id', matched('jobs.get'), async (req, res) => {
    const { actor, trace } = req as ApiRequest;
    const id = String(req.params.id);
    const job = isAuthenticated(actor) ? await jobs.find(id, idempotencyScope(actor), trace) : undefined;
    if (!job) throw new AppError('NOT_FOUND', `job ${id} not found`);
    sendJson(res, 200, job);
  });
  return router;
}
