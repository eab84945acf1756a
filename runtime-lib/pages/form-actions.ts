// A page's form posted back (`_action=form`): the form's own checks (required, pattern, min, max),
// then the write through the entity's store as the request's actor, exactly as the API writes
// (access rules, field write rules, validation, command-only protection). An update or delete acts
// on the record the page's first query names, and only if the page showed it as it is now (`_seen`).
// Refused: the form again with the person's input and each field's message (nothing written).
// Done: the flash and a 303 to `onSuccess.redirect` (POST/redirect/GET).

import type { ServerResponse } from 'node:http';
import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { RecordKey } from '../core/ids.ts';
import type { Row } from '../data/database.ts';
import type { EntitySpec, EntityStore, RequestContext } from '../data/entity-store.ts';
import { validationError } from '../data/fields.ts';
import { isMultipart } from '../http/body.ts';
import { requestContext } from '../http/context.ts';
import { type ApiRequest, pathOf } from '../http/request.ts';
import type { ActionPages } from './command-actions.ts';
import { recordDigest } from './command-forms.ts';
import { fieldLabel } from './form-fields.ts';
import { shownFields } from './form-layout.ts';
import type { PageFormFieldSpec, PageFormSpec } from './form-spec.ts';
import { runPageQueries } from './page-queries.ts';
import type { PageRequest } from './page-routes.ts';
import type { PageSpec } from './page-spec.ts';
import { leaveFlash, redirect } from './page-view.ts';

/**
 * What a form with file fields needs of the app's uploads (runtime/uploads/entity-files.ts
 * EntityFiles, one per entity with file fields): the multipart body read (its `_csrf` checked
 * before any file is stored), the write's context, and the files kept once the write commits.
 */
export interface FormUploads {
  receive(
    req: ApiRequest,
    res: ServerResponse,
  ): Promise<{ fields: Record<string, string>; files: Row; discard(): Promise<void> }>;
  context(req: ApiRequest): RequestContext;
  committed(req: ApiRequest, ctx: RequestContext, result: { status: number; replayed: boolean }): Promise<void>;
}

/**
 * The requests a form page reads a multipart body of: POSTs to a page whose form has file
 * fields (the front door lets them through: FrontDoorOptions.readsMultipart). Paths match as
 * Express matches the page's (a `:name` segment any one segment, a trailing slash allowed).
 */
export function formUploadRequests(pages: readonly PageSpec[]): (req: ApiRequest) => boolean {
  const literal = (segment: string) => segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const paths = pages
    .filter((p) => p.form?.fields.some((f) => f.type === 'file'))
    .map(
      (p) =>
        new RegExp(
          `^${p.path
            .split('/')
            .map((s) => (s.startsWith(':') ? '[^/]+' : literal(s)))
            .join('/')}/?$`,
        ),
    );
  return (req) => req.method === 'POST' && paths.some((path) => path.test(pathOf(req.url)));
}

type Outcome = { done: Row } | { stale: true } | { gone: true };

export async function formAction(pr: PageRequest, posted: Readonly<Record<string, string>>, pages: ActionPages) {
  const form = pr.page.form as PageFormSpec;
  let sent = posted;
  let files: Row = {};
  let received: { discard(): Promise<void> } | undefined;
  const uploads = isMultipart(pr.req) ? pr.site.files?.[form.entity] : undefined;
  if (isMultipart(pr.req)) {
    if (!uploads || !form.fields.some((f) => f.type === 'file'))
      throw new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        'this form takes no files: send it as application/x-www-form-urlencoded',
      );
    // Refused (its token, a file too large or of another type): an error page, nothing stored.
    const body = await uploads.receive(pr.req, pr.res);
    ({ fields: sent, files } = body);
    received = body;
  }
  const ctx = uploads ? uploads.context(pr.req) : requestContext(pr.req, { mutation: false });
  const store = pr.site.stores.get(form.entity) as EntityStore;
  const first = pr.page.queries[0];
  const refuse = async (status: number, message: string, details: readonly ErrorDetail[] = []) => {
    // A refused write keeps none of the files it brought, removed before the answer.
    await received?.discard();
    return pages.render(pr, {
      status,
      flash: form.onError?.message ? { kind: 'error', text: form.onError.message } : undefined,
      form: { message, details, sent },
    });
  };
  let outcome: Outcome;
  try {
    outcome = await store.db.write(function* () {
      if (form.method === 'create')
        return { done: yield* store.create(ctx, formInput(form, store.spec, sent, undefined, files)) };
      // The record as the page shows it now: its path names it, never the form.
      const results = yield* runPageQueries(pr.site.stores, [first], ctx, pr.params);
      const shown = results[first.name].records[0];
      if (!shown) return { gone: true };
      if (sent._seen !== recordDigest(shown)) return { stale: true };
      const key = shown[store.spec.primaryKey] as RecordKey;
      if (form.method === 'delete') {
        yield* store.delete(ctx, key);
        return { done: shown };
      }
      return { done: yield* store.update(ctx, key, formInput(form, store.spec, sent, shown, files)) };
    }, ctx.trace);
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) {
      await received?.discard();
      throw err;
    }
    const details = err.code === 'VALIDATION_FAILED' ? withMessages(form, err.details ?? []) : (err.details ?? []);
    return refuse(err.status, `Not saved: ${err.message}.`, details);
  }
  if ('gone' in outcome) {
    await received?.discard();
    return pages.notFound(pr);
  }
  if ('stale' in outcome) {
    return refuse(409, 'Not saved: this record changed since the page showed it. Look at it again, then decide.');
  }
  // The files the write references are kept, those it replaced removed.
  if (uploads) await uploads.committed(pr.req, ctx, { status: 200, replayed: false });
  leaveFlash(pages.site, pr.res, { kind: 'success', text: form.onSuccess?.message ?? doneMessage(form, store.spec) });
  redirect(pr.res, successHref(pr, form, outcome.done));
}

/**
 * The form's fields as the entity's input: checked against the form's own rules first (Zebric's:
 * required, pattern, a number's min and max), then each value as its field's type takes it. A
 * checkbox not sent is false; an empty field is left out of a create (its default applies) and
 * clears an update's field; an empty password leaves it as it is. Only the form's fields are
 * sent, and of an update's only those the viewer was shown.
 */
export function formInput(
  form: PageFormSpec,
  spec: EntitySpec,
  sent: Readonly<Record<string, string>>,
  shown?: Row,
  files: Row = {},
) {
  const issues: ErrorDetail[] = [];
  const out: Row = {};
  for (const field of shownFields(form, shown)) {
    if (field.value !== undefined) {
      out[field.name] = field.value;
      continue;
    }
    const type = spec.fields.find((f) => f.name === field.name)?.type;
    // A file field holds the file stored from the body; none sent leaves it as it is.
    const raw = field.type === 'file' ? (files[field.name] === undefined ? undefined : 'file') : sent[field.name];
    const problem = formRule(field, raw);
    if (problem) {
      issues.push({ field: field.name, code: 'INVALID_VALUE', message: problem });
      continue;
    }
    if (field.type === 'file') {
      if (raw !== undefined) out[field.name] = files[field.name];
      continue;
    }
    if (field.type === 'checkbox') {
      out[field.name] = raw !== undefined && raw !== '';
      continue;
    }
    if (raw === undefined || (raw === '' && field.type === 'password')) continue;
    if (raw === '') {
      if (shown) out[field.name] = null;
      continue;
    }
    out[field.name] = typed(type, raw, spec.fields.find((f) => f.name === field.name)?.ref?.idType);
  }
  if (issues.length) throw validationError(issues);
  return out;
}

/** Zebric's form checks of a field's text, as its message, or undefined when it passes. */
function formRule(field: PageFormFieldSpec, raw: string | undefined): string | undefined {
  const label = fieldLabel(field);
  const empty = raw === undefined || raw === '';
  if (field.required && empty) return `${label} is required`;
  if (empty) return undefined;
  // The whole value must match, as the browser's pattern attribute means it.
  if (field.pattern !== undefined && !patternOf(field.pattern).test(raw)) {
    return field.errorMessage ?? `${label} is not in the expected format`;
  }
  if (field.type === 'number') {
    const n = Number(raw);
    if (field.min !== undefined && n < field.min) return `${label} must be at least ${field.min}`;
    if (field.max !== undefined && n > field.max) return `${label} must be at most ${field.max}`;
  }
  return undefined;
}

/**
 * The pattern as the browser reads a pattern attribute: the whole value, with the `v` flag (the
 * generator compiled it without flags, which `v` may refuse: then `u`, then none).
 */
function patternOf(pattern: string): RegExp {
  for (const flags of ['v', 'u', '']) {
    try {
      return new RegExp(`^(?:${pattern})$`, flags);
    } catch {
      // The next, looser reading.
    }
  }
  return new RegExp(`^(?:${pattern})$`);
}

/** A form's text as its field's type: numbers, booleans, JSON and date-times as the API takes them. */
function typed(type: string | undefined, raw: string, refKey: string | undefined): unknown {
  const number = Number(raw);
  switch (type) {
    case 'Integer':
    case 'Float':
      // What is not a number stays text: the store's check names the field.
      return raw.trim() !== '' && Number.isFinite(number) ? number : raw;
    case 'Ref':
      return refKey === 'Integer' && /^-?\d+$/.test(raw) ? number : raw;
    case 'Boolean':
      return raw === 'true' || raw === 'on' ? true : raw === 'false' ? false : raw;
    case 'JSON':
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        return raw;
      }
    case 'DateTime':
      // datetime-local sends a time without a zone: read as UTC, as the form showed it.
      return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(raw)
        ? `${raw}:00Z`
        : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(raw)
          ? `${raw}Z`
          : raw;
    default:
      return raw;
  }
}

/**
 * A field's `error_message` stands for the store's message of a value it refuses (not for a
 * conflict or a refusal of the person). The form's own checks chose their message already.
 */
function withMessages(form: PageFormSpec, details: readonly ErrorDetail[]): ErrorDetail[] {
  return details.map((d) => {
    const field = form.fields.find((f) => f.name === d.field);
    return field?.errorMessage && d.code !== 'INVALID_VALUE' ? { ...d, message: field.errorMessage } : d;
  });
}

function doneMessage(form: PageFormSpec, spec: EntitySpec): string {
  const name = spec.name.replace(/([a-z0-9])([A-Z])/g, '$1 $2');
  return `${name} ${form.method === 'create' ? 'created' : form.method === 'update' ? 'saved' : 'deleted'}.`;
}

/**
 * `onSuccess.redirect` with each `{name}` filled from the record written (its key: `{id}`) or the
 * page's path parameters, URL-encoded. Without one: a deleted record's page is gone, so the app's
 * first page; otherwise this page again.
 */
function successHref(pr: PageRequest, form: PageFormSpec, record: Row): string {
  const target = form.onSuccess?.redirect;
  if (!target) return form.method === 'delete' ? '/' : (pr.req.url ?? '/').split('?')[0];
  return target.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = Object.hasOwn(record, name) ? record[name] : pr.params[name];
    return value === undefined || value === null ? '' : encodeURIComponent(String(value as string));
  });
}
