// What a plugin's init(engine, config) gets: Zebric 0.6's EngineAPI, cut to the capabilities its
// [[plugins]] entry declares. `limited` (the default) grants only those; `full` grants all four.
// A member of a capability not granted is there, and throws naming the missing capability when
// read, so that a plugin learns at once why. This holds inside one Node process only as far as
// the plugin uses what it is given: it is no sandbox (README.md, docs/blueprint/plugins.md).

import { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Actor, triggerActor } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import type { EntityStore } from '../data/entity-store.ts';
import type { Capability, PluginEntry } from './load.ts';
import { guardedFetch } from './outbound-fetch.ts';
import { type PluginFileStore, pluginStorage } from './plugin-storage.ts';

export const CAPABILITIES: readonly Capability[] = ['database', 'network', 'storage', 'filesystem'];

/** What the app hands every plugin's engine. */
export interface EngineDeps {
  appDir: string;
  /** The working directory, under which ./data/plugins/<name>/ is a filesystem plugin's folder. */
  cwd: string;
  stores: ReadonlyMap<string, EntityStore>;
  /** Production: outbound requests to local and private addresses are refused. */
  production: boolean;
  /** Stores a job of the workflow, started by `actor`; absent in an app without workflows. */
  trigger?: (workflow: string, data: Record<string, unknown>, actor: Actor) => Promise<void>;
  /** The blueprint as plugins read it (read-only). */
  blueprint: Readonly<Record<string, unknown>>;
  /** Shared by every plugin: `engine.on` / `engine.emit`. */
  events: EventEmitter;
  cache: PluginCache;
  /** The uploads store: present when a plugin is granted `storage` (or the app has file fields). */
  files?: PluginFileStore;
}

/** The actor a plugin acts as: a system actor named after it, so audit records name the plugin. */
export const pluginActor = (name: string): Actor => triggerActor(`plugin:${name}`);

export function engineApi(entry: PluginEntry, deps: EngineDeps): Record<string, unknown> {
  const granted = new Set<Capability>(entry.trustLevel === 'full' ? CAPABILITIES : entry.capabilities);
  const actor = pluginActor(entry.name);
  const prefix = `plugin ${entry.name}:`;
  const api: Record<string, unknown> = {
    blueprint: deps.blueprint,
    cache: deps.cache,
    workflows: {
      trigger: async (name: string, context: Record<string, unknown> = {}) => {
        if (!deps.trigger) throw new Error(`${prefix} this app has no workflows to trigger`);
        await deps.trigger(name, { ...context }, actor);
      },
    },
    on: (event: string, handler: (...args: unknown[]) => void) => void deps.events.on(event, handler),
    emit: (event: string, data: unknown) => void deps.events.emit(event, data),
    log: {
      debug: (message: string, meta?: unknown) => {
        if (process.env.LOG_LEVEL === 'debug') console.log(prefix, message, meta ?? '');
      },
      info: (message: string, meta?: unknown) => console.log(prefix, message, meta ?? ''),
      warn: (message: string, meta?: unknown) => console.warn(prefix, message, meta ?? ''),
      error: (message: string, meta?: unknown) => console.error(prefix, message, meta ?? ''),
    },
  };
  const capability = (member: string, needs: Capability, make: () => unknown) => {
    let made: unknown;
    Object.defineProperty(api, member, {
      enumerable: true,
      get: () => {
        if (!granted.has(needs)) {
          throw new Error(
            `plugin "${entry.name}" did not declare the "${needs}" capability: engine.${member} is withheld ` +
              `(add "${needs}" to capabilities in its [[plugins]] entry)`,
          );
        }
        made ??= make();
        return made;
      },
    });
  };
  capability('db', 'database', () => pluginDb(deps.stores, actor));
  capability('fetch', 'network', () => guardedFetch(entry.name, deps.production));
  capability('dataDir', 'filesystem', () => {
    // Its own folder; a scoped name (@team/crm) is one folder, not two.
    const dir = path.resolve(deps.cwd, 'data', 'plugins', entry.name.replaceAll('/', '__'));
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  });
  capability('storage', 'storage', () => {
    if (!deps.files) throw new Error(`plugin "${entry.name}": this app opened no file store`);
    return pluginStorage(entry.name, deps.files);
  });
  return api;
}

/**
 * Entity access as the API gives it, as the plugin's system actor: every write validated, checked
 * against field and command-only protection, and audited under `plugin:<name>`. The methods of
 * Zebric's query executor that plugins call.
 */
function pluginDb(stores: ReadonlyMap<string, EntityStore>, actor: Actor) {
  const ctx = { actor };
  const storeOf = (entity: string): EntityStore => {
    const store = stores.get(entity);
    if (!store) throw new AppError('NOT_FOUND', `there is no entity ${entity}`);
    return store;
  };
  return {
    create: (entity: string, data: unknown) => {
      const store = storeOf(entity);
      return store.db.write(() => store.create(ctx, data));
    },
    update: (entity: string, id: string | number, data: unknown) => {
      const store = storeOf(entity);
      return store.db.write(() => store.update(ctx, id, data));
    },
    delete: async (entity: string, id: string | number) => {
      const store = storeOf(entity);
      await store.db.write(() => store.delete(ctx, id));
    },
    findById: async (entity: string, id: string | number) => {
      const store = storeOf(entity);
      try {
        return await store.db.read(store.get(ctx, id));
      } catch (err) {
        if (err instanceof AppError && err.code === 'NOT_FOUND') return null;
        throw err;
      }
    },
    /** Zebric's `execute({ entity, where, limit, offset })`: `where` as equalities. */
    execute: async (query: { entity: string; where?: Record<string, unknown>; limit?: number; offset?: number }) => {
      const store = storeOf(query.entity);
      const where = Object.entries(query.where ?? {}).map(([field, value]) => ({ field, value }));
      const list = store.list(ctx, { limit: query.limit ?? 100, offset: query.offset ?? 0, where });
      return (await store.db.read(list)).items;
    },
  };
}

/** Zebric's cache API, in this process's memory (shared by the plugins; gone on restart). */
export class PluginCache {
  private readonly entries = new Map<string, { value: unknown; expires?: number }>();

  async get<T>(key: string): Promise<T | null> {
    const entry = this.entries.get(key);
    if (entry?.expires !== undefined && entry.expires <= Date.now()) this.entries.delete(key);
    return this.entries.has(key) ? (this.entries.get(key)?.value as T) : null;
  }
  /** `ttl` in seconds, as Zebric's. */
  async set(key: string, value: unknown, ttl?: number): Promise<void> {
    this.entries.set(key, { value, expires: ttl === undefined ? undefined : Date.now() + ttl * 1000 });
  }
  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }
  async incr(key: string): Promise<number> {
    const next = Number((await this.get<number>(key)) ?? 0) + 1;
    this.entries.set(key, { ...this.entries.get(key), value: next });
    return next;
  }
  async exists(key: string): Promise<boolean> {
    return (await this.get(key)) !== null;
  }
  async clear(): Promise<void> {
    this.entries.clear();
  }
}
