// Multipart bodies (multipart/form-data: the API's uploads, a form with a file input), read with
// busboy as they stream in: each file part goes to a file of the store's `incoming` folder while
// it is counted, and is cut off at its field's `max` or the app's 50 MB limit, whichever is
// lower, so that no upload is ever held whole in memory nor read past its limit. A finished file
// is checked (its declared type against the field's `accept`; its own bytes, with `file-type`,
// against the type it declares) and stored under a new name (stored-names.ts).
//
// Every file stored for a request is removed when the response ends, unless the write that
// references it committed (Received.keep): a refused or failed write leaves no file behind.
//
// A form's CSRF token is its `_csrf` field, which must come before the first file part (a form
// puts its hidden `_csrf` input first): the deferred check (http/body.ts) is made there, before any
// file is written, or at the end of a body without files.

import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { type Readable, Transform, type TransformCallback, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileTypeFromFile, supportedMimeTypes } from 'file-type';
import { AppError } from '../core/errors.ts';
import { UPLOAD_LIMIT } from '../core/values.ts';
import { StoredFile } from '../data/fields.ts';
import { takeCsrfCheck } from '../http/body.ts';
import type { ApiRequest } from '../http/request.ts';
import { type FileStore, filesUnavailable } from './file-store.ts';
import { newStoredName, UPLOADS_PREFIX } from './stored-names.ts';

/** How long the rest of a refused body is read and dropped before its connection is cut. */
const LINGER_MS = 2000;
/** The largest text field of a multipart body, as the JSON body limit (http/body.ts). */
const TEXT_FIELD_LIMIT = 1024 * 1024;

/** A field that takes a file: its name, its largest size in bytes, the MIME types it takes. */
export interface UploadField {
  name: string;
  max?: number;
  /** MIME types, `type/*` wildcards allowed; absent: any type. */
  accept?: readonly string[];
}

/** What a multipart body held. */
export interface Received {
  /** The text fields as sent (the `_csrf` field taken out), in a prototype-less object. */
  fields: Record<string, string>;
  /** The files stored, by field (an empty file input of a form sends none). */
  files: Record<string, StoredFile>;
  /** Keeps the stored files: a write that references them has committed. */
  keep(): void;
  /** Removes the stored files now (a write that failed); done anyway when the response ends without keep(). */
  discard(): Promise<void>;
}

/** busboy's events, as far as this module uses them (busboy ships no types). */
interface BusboyEvents {
  on(
    event: 'field',
    listener: (name: string, value: string, info: { nameTruncated: boolean; valueTruncated: boolean }) => void,
  ): this;
  on(
    event: 'file',
    listener: (name: string, stream: Readable, info: { filename?: string; mimeType: string }) => void,
  ): this;
  on(event: 'close' | 'partsLimit' | 'filesLimit' | 'fieldsLimit', listener: () => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
}
type Busboy = BusboyEvents & Writable;
type BusboyFactory = (config: {
  headers: ApiRequest['headers'];
  limits: Record<string, number>;
  defParamCharset: string;
}) => Busboy;
const busboy = createRequire(import.meta.url)('busboy') as BusboyFactory;

/** Spellings browsers and clients use for the same type. */
const TYPE_ALIASES: Readonly<Record<string, string>> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/x-png': 'image/png',
  'application/x-zip-compressed': 'application/zip',
  'application/x-pdf': 'application/pdf',
  'audio/mp3': 'audio/mpeg',
  'audio/x-wav': 'audio/wav',
};

/** A MIME type as compared: lower case, without parameters, aliases resolved. */
export function mimeType(type: string): string {
  const bare = type.split(';')[0].trim().toLowerCase();
  return TYPE_ALIASES[bare] ?? bare;
}

/** Whether `accept` (exact types, `type/*`, `*\/*`) takes `type`; no accept takes any. */
export function accepts(accept: readonly string[] | undefined, type: string): boolean {
  if (accept === undefined) return true;
  return accept.some((entry) => {
    const a = mimeType(entry);
    return a === type || a === '*/*' || (a.endsWith('/*') && type.startsWith(a.slice(0, -1)));
  });
}

const refused = (code: 'UPLOAD_NOT_ACCEPTED' | 'UPLOAD_TYPE_NOT_ACCEPTED', field: string, message: string) =>
  new AppError(code, `${field}: ${message}`, { details: [{ field, code, message }] });

function tooLarge(field: string, limit: number): AppError {
  const message = `the file is larger than ${limit} bytes${limit === UPLOAD_LIMIT ? ' (the upload limit)' : ''}`;
  return new AppError('UPLOAD_TOO_LARGE', `${field}: ${message}`, {
    details: [{ field, code: 'UPLOAD_TOO_LARGE', message }],
  });
}

/**
 * Whether the file's own bytes are of the type it declares: where `file-type` recognises them,
 * they must be that type; where it does not, the declared type must be one it would have
 * recognised (plain text, CSV... it cannot tell apart, and they are served as attachments).
 */
async function contentProblem(file: string, declared: string): Promise<string | undefined> {
  const found = await fileTypeFromFile(file);
  if (found) {
    const actual = mimeType(found.mime);
    return actual === declared ? undefined : `the file is declared ${declared} but its bytes are ${actual}`;
  }
  return supportedMimeTypes.has(declared) ? `the file is declared ${declared} but its bytes are not` : undefined;
}

/**
 * Reads the multipart body of `req` for the file fields `fields`, stores its files in `store`
 * and answers what it held. Refused (the promise rejects with the AppError to send, and every
 * file stored is removed first): a malformed body, a file part for a field not in `fields`, a
 * text part for one that is, a field sent twice, a file beyond its limit (413; the rest of the
 * body is dropped, the connection cut if the client still sends 2 s after the answer), a
 * declared type its field does not accept or bytes of another type (415), a CSRF token that
 * does not pass. Text parts are decoded as UTF-8.
 *
 * For server-rendered forms: `const got = await receiveMultipart(req, res, { fields, store })`,
 * then write with `got.fields` and `got.files` (each a StoredFile, the value a file field takes)
 * and call `got.keep()` once the write has committed, or `await got.discard()` when it fails.
 * The front door must let the form's route read the body (FrontDoorOptions.readsMultipart).
 */
export function receiveMultipart(
  req: ApiRequest,
  res: ServerResponse,
  options: { fields: readonly UploadField[]; store: FileStore },
): Promise<Received> {
  const { store } = options;
  const byName = new Map(options.fields.map((f) => [f.name, f]));
  const fields = Object.create(null) as Record<string, string>;
  const files = Object.create(null) as Record<string, StoredFile>;
  const seen = new Set<string>();
  /** Names written to the store for this request. */
  const stored: string[] = [];
  let kept = false;
  const discard = async () => {
    const names = stored.splice(0);
    await Promise.all(names.map((name) => store.remove(name).catch(() => undefined)));
  };
  res.once('close', () => {
    if (!kept) void discard();
  });
  const csrf = takeCsrfCheck(req);
  let csrfSent: string | undefined;
  let csrfChecked = csrf === undefined;
  return new Promise<Received>((resolve, reject) => {
    let settled = false;
    let closed = false;
    let active = 0;
    let parser: Busboy;
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      if (!req.complete) {
        // The rest of the body is not kept: what the client still sends is read and dropped for a
        // moment after the answer, then the connection is cut. Closing it at once would reset it
        // while the client is still sending, and the client could lose the answer with it.
        req.resume();
        const cut = setTimeout(() => req.destroy(), LINGER_MS);
        cut.unref();
        req.once('end', () => clearTimeout(cut));
      }
      void discard().then(() => reject(err));
    };
    const checkCsrf = (): boolean => {
      if (csrfChecked || csrf === undefined) return true;
      csrfChecked = true;
      const verdict = csrf(csrfSent);
      if (verdict) fail(verdict);
      return verdict === undefined;
    };
    const finish = (): void => {
      if (settled || !closed || active > 0 || !checkCsrf()) return;
      settled = true;
      resolve({
        fields,
        files,
        keep: () => {
          kept = true;
        },
        discard,
      });
    };
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        limits: {
          // A backstop: each file is cut off at its own limit first (receiveFile).
          fileSize: UPLOAD_LIMIT + 1,
          files: byName.size,
          fields: 1000,
          parts: 1000 + byName.size,
          fieldSize: TEXT_FIELD_LIMIT,
          fieldNameSize: 200,
        },
      });
    } catch (err) {
      reject(new AppError('UPLOAD_NOT_ACCEPTED', `malformed multipart body: ${(err as Error).message}`));
      return;
    }
    const once = (name: string): boolean => {
      if (!seen.has(name)) return seen.add(name) && true;
      fail(refused('UPLOAD_NOT_ACCEPTED', name, 'the field is sent more than once'));
      return false;
    };
    parser.on('field', (name, value, info) => {
      if (settled) return;
      if (name === '_csrf') {
        csrfSent ??= value;
        return;
      }
      if (info.nameTruncated || info.valueTruncated)
        return fail(new AppError('PAYLOAD_TOO_LARGE', `a text field is longer than ${TEXT_FIELD_LIMIT} bytes`));
      if (byName.has(name)) return fail(refused('UPLOAD_NOT_ACCEPTED', name, 'takes a file part, not text'));
      if (once(name)) fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (settled || !checkCsrf()) return void stream.resume();
      const field = byName.get(name);
      if (!field) {
        stream.resume();
        return fail(refused('UPLOAD_NOT_ACCEPTED', name, 'is not a file field: it takes no file'));
      }
      if (!once(name)) return void stream.resume();
      // A form's file input left empty sends a part without a file name: no file.
      if (!info.filename) return void stream.resume();
      const declared = mimeType(info.mimeType);
      if (!accepts(field.accept, declared)) {
        stream.resume();
        return fail(
          refused('UPLOAD_TYPE_NOT_ACCEPTED', name, `${declared} is not accepted (${field.accept?.join(', ')})`),
        );
      }
      active++;
      receiveFile(stream, field, declared).then(
        (file) => {
          active--;
          if (file) files[name] = file;
          finish();
        },
        (err: unknown) => {
          active--;
          fail(err);
        },
      );
    });
    parser.on('close', () => {
      closed = true;
      finish();
    });
    parser.on('error', (err) => fail(new AppError('UPLOAD_NOT_ACCEPTED', `malformed multipart body: ${err.message}`)));
    const overLimit = (what: string) => () =>
      fail(new AppError('UPLOAD_NOT_ACCEPTED', `the body has too many ${what}`));
    parser.on('filesLimit', overLimit('files'));
    parser.on('fieldsLimit', overLimit('fields'));
    parser.on('partsLimit', overLimit('parts'));
    req.on('close', () => {
      if (!req.complete) fail(new AppError('UPLOAD_NOT_ACCEPTED', 'the body ended before it was complete'));
    });
    req.pipe(parser);

    /** Streams one file part to the incoming folder, checks it and stores it; undefined once the request failed. */
    async function receiveFile(
      stream: Readable,
      field: UploadField,
      declared: string,
    ): Promise<StoredFile | undefined> {
      const limit = Math.min(field.max ?? UPLOAD_LIMIT, UPLOAD_LIMIT);
      const temp = path.join(store.incoming, `${randomBytes(12).toString('hex')}.part`);
      const hash = createHash('sha256');
      let size = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
          size += chunk.length;
          if (size > limit) return callback(tooLarge(field.name, limit));
          hash.update(chunk);
          callback(null, chunk);
        },
      });
      try {
        await pipeline(stream, counter, fs.createWriteStream(temp));
        if (settled) return undefined;
        const problem = await contentProblem(temp, declared);
        if (problem) throw refused('UPLOAD_TYPE_NOT_ACCEPTED', field.name, problem);
        const name = newStoredName(declared);
        stored.push(name);
        await store.put(name, temp, size, declared).catch((err: unknown) => {
          throw filesUnavailable(err);
        });
        // The request failed while the file was being stored: discard() may have come first.
        if (settled) {
          await store.remove(name);
          return undefined;
        }
        return new StoredFile(`${UPLOADS_PREFIX}${name}`, hash.digest('hex'), size, declared);
      } finally {
        await fs.promises.rm(temp, { force: true });
      }
    }
  });
}
