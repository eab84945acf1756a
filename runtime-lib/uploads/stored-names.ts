// The names uploaded files are stored under: made by the server (random, so that nobody can guess
// or choose one), with an extension from the file's checked type. A name is also what a
// download asks for, so it is checked against one strict pattern before any store is touched: no
// path separator, no dot but the extension's, nothing a folder or a bucket could read as a path.

import { randomBytes } from 'node:crypto';

/** What a file field stores: this prefix, then the stored name. */
export const UPLOADS_PREFIX = '/uploads/';

/** 32 lower-case hex digits (128 random bits), a dot and a short extension. */
const STORED_NAME = /^[0-9a-f]{32}\.[a-z0-9]{1,5}$/;

/** The extensions of the types the app names files by; any other type is stored as `.bin`. */
const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/bmp': 'bmp',
  'image/tiff': 'tif',
  'image/svg+xml': 'svg',
  'application/pdf': 'pdf',
  'application/zip': 'zip',
  'application/gzip': 'gz',
  'application/json': 'json',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/vnd.oasis.opendocument.text': 'odt',
  'audio/mpeg': 'mp3',
  'audio/wav': 'wav',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'text/markdown': 'md',
};

const TYPES: ReadonlyMap<string, string> = new Map(Object.entries(EXTENSIONS).map(([type, ext]) => [ext, type]));

/**
 * Images a browser shows without running anything: served inline. Everything else (SVG, which
 * can hold scripts, HTML-like text, documents) is served as an attachment.
 */
const INLINE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif']);

/** A new stored name for a file of `type` (its MIME type, checked). */
export function newStoredName(type: string): string {
  return `${randomBytes(16).toString('hex')}.${EXTENSIONS[type] ?? 'bin'}`;
}

/** Whether `name` is one newStoredName makes: the only names a store is ever asked about. */
export function isStoredName(name: string): boolean {
  return STORED_NAME.test(name);
}

/** The stored name of a file field's value (`/uploads/<name>`), or undefined when it is not one. */
export function storedNameOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || !value.startsWith(UPLOADS_PREFIX)) return undefined;
  const name = value.slice(UPLOADS_PREFIX.length);
  return isStoredName(name) ? name : undefined;
}

/** The Content-Type a stored file is served with, from its extension. */
export function servedType(name: string): string {
  const type = TYPES.get(name.slice(name.lastIndexOf('.') + 1)) ?? 'application/octet-stream';
  return type.startsWith('text/') ? `${type}; charset=utf-8` : type;
}

/** Whether a browser may show the file in place (a safe image type) rather than download it. */
export function servedInline(name: string): boolean {
  return INLINE_TYPES.has(servedType(name));
}
