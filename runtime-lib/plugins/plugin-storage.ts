// `engine.storage` of a plugin that declared `storage`: Zebric's storage API over the app's uploads
// store (a folder, ./data/uploads/, or the bucket UPLOADS_URL names). A plugin's keys are its own:
// each is stored under a name made from the plugin's name and the key (hashed: no key reaches a
// path), so plugins never see each other's files nor the records' uploads. These files are not
// served: GET /uploads/<name> serves only files a record's file field holds.

import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';

/** What the plugins need of the uploads store (uploads/file-store.ts FileStore). */
export interface PluginFileStore {
  readonly incoming: string;
  put(name: string, source: string, size: number, contentType: string): Promise<void>;
  open(name: string): Promise<{ body: Readable; size: number } | undefined>;
  remove(name: string): Promise<void>;
}

export function pluginStorage(plugin: string, store: PluginFileStore) {
  const nameOf = (key: string) =>
    `plugin-${createHash('sha256').update(`${plugin}\0${key}`).digest('hex').slice(0, 40)}.bin`;
  const checked = (key: unknown): string => {
    if (typeof key !== 'string' || key === '')
      throw new Error(`plugin "${plugin}": a storage key is a non-empty string`);
    return key;
  };
  return {
    /** Stores `data` under `key` (replacing what it held); resolves to the key, as Zebric's. */
    upload: async (key: string, data: ArrayBuffer | Uint8Array, options?: { contentType?: string }) => {
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
      const source = path.join(store.incoming, `plugin-${randomBytes(16).toString('hex')}`);
      await fs.promises.writeFile(source, bytes);
      const type = options?.contentType ?? 'application/octet-stream';
      await store.put(nameOf(checked(key)), source, bytes.byteLength, type);
      return key;
    },
    download: async (key: string): Promise<ArrayBuffer> => {
      const file = await store.open(nameOf(checked(key)));
      if (!file) throw new Error(`plugin "${plugin}": storage key not found: ${key}`);
      const chunks: Buffer[] = [];
      for await (const chunk of file.body) chunks.push(chunk as Buffer);
      const all = Buffer.concat(chunks);
      return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer;
    },
    delete: async (key: string) => store.remove(nameOf(checked(key))),
    /** Not a URL anyone can fetch (these files are not served): the key as the plugin's storage names it. */
    getUrl: (key: string) => `plugin-storage://${encodeURIComponent(plugin)}/${encodeURIComponent(checked(key))}`,
  };
}
