// GET (and HEAD) /uploads/<stored-name>: an uploaded file, to an actor who may read a record whose
// file field holds it, and that field of it (the entity's read rule and the field's read rule,
// data/entity-store.ts mayReadValue). Anyone else hears 404, as for a file that does not exist,
// and so does a name that is not one the app makes (checked before any store is asked: no path
// traversal). The file is sent with its stored type, `X-Content-Type-Options: nosniff`, a
// sandboxing Content-Security-Policy, and shown in place only when it is a plain image type;
// anything else is an attachment named by its stored name.

import { pipeline } from 'node:stream/promises';
import { Router } from 'express';
import { AppError } from '../core/errors.ts';
import type { EntityStore } from '../data/entity-store.ts';
import { requestContext } from '../http/context.ts';
import { matched } from '../http/pipeline.ts';
import { type FileStore, filesUnavailable } from './file-store.ts';
import { isStoredName, servedInline, servedType, UPLOADS_PREFIX } from './stored-names.ts';

/** An entity whose file fields may reference uploads. */
export interface FileReader {
  store: EntityStore;
  fields: readonly string[];
}

export function downloadRouter(files: FileStore, readers: readonly FileReader[]): Router {
  const router = Router();
  router.get('/uploads/:name', matched('uploads.get'), async (req, res) => {
    const name = String(req.params.name);
    const missing = () => new AppError('NOT_FOUND', `no file ${UPLOADS_PREFIX}${name}`);
    if (!isStoredName(name)) throw missing();
    const ctx = requestContext(req, { mutation: false });
    const value = `${UPLOADS_PREFIX}${name}`;
    let readable = false;
    for (const { store, fields } of readers) {
      for (const field of fields) {
        readable = await store.db.read(store.mayReadValue(ctx, field, value), ctx.trace);
        if (readable) break;
      }
      if (readable) break;
    }
    if (!readable) throw missing();
    const file = await files.open(name).catch((err: unknown) => {
      throw filesUnavailable(err);
    });
    if (!file) throw missing();
    res.setHeader('Content-Type', servedType(name));
    res.setHeader('Content-Length', String(file.size));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Disposition', `${servedInline(name) ? 'inline' : 'attachment'}; filename="${name}"`);
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    // Who may read it can change: never served from a shared cache, revalidated each time.
    res.setHeader('Cache-Control', 'private, no-cache');
    if (req.method === 'HEAD') {
      file.body.destroy();
      res.end();
      return;
    }
    await pipeline(file.body, res);
  });
  return router;
}
