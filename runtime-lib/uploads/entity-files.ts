// The file fields of one entity on its create and update routes: the body (JSON, or multipart
// with its files stored by receive.ts), the write's context (which collects the files it replaces
// or deletes), and, once the write has committed, the new files kept and the released ones
// removed. A refused or failed write, or an Idempotency-Key's replay, keeps none of the new files
// (receive.ts removes them when the response ends).
//
// What a JSON body may put in a file field: null, to clear it. A string is refused by the field's
// check (data/fields.ts StoredFile), so no write can point a record at a file someone else uploaded.

import type { ServerResponse } from 'node:http';
import type { FieldSpec, Row } from '../data/fields.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import { AppError } from '../core/errors.ts';
import { isMultipart, jsonBody } from '../http/body.ts';
import { requestContext } from '../http/context.ts';
import type { ApiRequest, Middleware, Next } from '../http/request.ts';
import type { FileStore } from './file-store.ts';
import { type Received, receiveMultipart, type UploadField } from './receive.ts';
import { storedNameOf } from './stored-names.ts';

/** A number as a form sends it: what JSON would write for it, nothing else. */
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A multipart text value as its field's JSON value: numbers, booleans and JSON as written, an
 * empty value of a field that is not text as null (a form's empty input). What does not parse
 * stays text, for the field's check to refuse with its own message.
 */
function fieldValue(f: FieldSpec | undefined, text: string): unknown {
  if (f === undefined) return text;
  const numeric = f.type === 'Integer' || f.type === 'Float' || (f.type === 'Ref' && f.ref?.idType === 'Integer');
  const plainText = f.type === 'Text' || f.type === 'LongText' || (f.type === 'Ref' && !numeric);
  if (text === '' && !plainText) return null;
  if (numeric) return NUMBER.test(text) ? Number(text) : text;
  if (f.type === 'Boolean') return text === 'true' ? true : text === 'false' ? false : text;
  if (f.type === 'JSON') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new AppError('VALIDATION_FAILED', `${f.name} must be JSON text in a multipart body`, {
        details: [{ field: f.name, code: 'INVALID_JSON', message: 'must be JSON text in a multipart body' }],
      });
    }
  }
  return text;
}

/**
 * A server-rendered form of an entity with file fields reads its body with receiveMultipart
 * (receive.ts) and `uploadFields`, makes the write's body with `bodyOf`, writes with `context`, and
 * ends with `committed` (or lets the response end: the files of a failed write are removed).
 */
export class EntityFiles {
  /** The entity's file fields, with their max and accept: receiveMultipart's `fields`. */
  readonly uploadFields: readonly UploadField[];
  private readonly byName: ReadonlyMap<string, FieldSpec>;
  /** The multipart body each request held. */
  private readonly received = new WeakMap<ApiRequest, Received>();

  constructor(
    store: EntityStore,
    private readonly files: FileStore,
    private readonly warn: (message: string) => void,
  ) {
    const specs = store.spec.fields;
    this.byName = new Map(specs.map((f) => [f.name, f]));
    this.uploadFields = specs.filter((f) => f.type === 'file').map((f) => ({ name: f.name, ...f.upload }));
  }

  /** The names of the entity's file fields. */
  get fieldNames(): string[] {
    return this.uploadFields.map((f) => f.name);
  }

  /** The body of a create or update: JSON, or multipart with the files stored (each a StoredFile). */
  readonly body: Middleware = (req: ApiRequest, res: ServerResponse, next: Next) => {
    if (!isMultipart(req)) return jsonBody(req, res, next);
    this.receive(req, res).then((received) => {
      try {
        req.body = this.bodyOf(received);
      } catch (err) {
        return next(err);
      }
      next();
    }, next);
  };

  /** Reads a multipart body of the request for the entity's file fields (receiveMultipart). */
  async receive(req: ApiRequest, res: ServerResponse): Promise<Received> {
    const received = await receiveMultipart(req, res, { fields: this.uploadFields, store: this.files });
    this.received.set(req, received);
    return received;
  }

  /**
   * The write's body from a multipart body: each text field as its field's JSON value (a number,
   * true or false, JSON; an empty value of a field that is not text as null), each file as the
   * StoredFile its field takes. Throws VALIDATION_FAILED for a JSON field that is not JSON.
   */
  bodyOf(received: Received): Row {
    const body: Row = {};
    // defineProperty: a part named "__proto__" becomes a key, which the write refuses.
    for (const [name, text] of Object.entries(received.fields))
      Object.defineProperty(body, name, { value: fieldValue(this.byName.get(name), text), enumerable: true });
    for (const [name, file] of Object.entries(received.files)) body[name] = file;
    return body;
  }

  /** The context of a write: the request's, collecting the files it releases (data/entity-store.ts). */
  context(req: ApiRequest): RequestContext {
    return { ...requestContext(req, { mutation: true }), files: { released: new Set() } };
  }

  /**
   * After the write of `ctx` has answered `result`: when it committed now (not an
   * Idempotency-Key's replay), its new files are kept and the files it released are removed.
   * A file that cannot be removed is reported, not the write's failure: it has committed.
   */
  async committed(req: ApiRequest, ctx: RequestContext, result: { status: number; replayed: boolean }): Promise<void> {
    if (result.replayed || result.status >= 300) return;
    this.received.get(req)?.keep();
    for (const value of ctx.files?.released ?? []) {
      const name = storedNameOf(value);
      if (name === undefined) continue;
      await this.files.remove(name).catch((err: unknown) => {
        this.warn(`uploads: cannot remove ${value}: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
  }
}
