// Loading the blueprint's enabled [[plugins]] when the app starts: each package imported (by the
// generated src/plugins.ts, whose import() names the package as written), its shape checked as
// Zebric 0.6 checks it, and every mistake refused with a message naming the plugin, so that the
// app does not start half-extended.

import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

export type Capability = 'database' | 'network' | 'storage' | 'filesystem';

/** One enabled [[plugins]] entry, as src/plugins.ts lists it. */
export interface PluginEntry {
  /** The npm package, and the name workflow plugin steps use. */
  name: string;
  /** Its range in package.json, for the message when it is not installed; absent for a module path. */
  dependency?: string;
  /**
   * Relative to the app: a `file:` plugin's folder, imported from there when not installed; or the
   * module a plugin named by a path (`./plugins/audit.js`, Zebric's local plugins) is.
   */
  localPath?: string;
  trustLevel: 'limited' | 'full';
  capabilities: readonly Capability[];
  config: Readonly<Record<string, unknown>>;
  /** `() => import('<package>')`: written in app code, where the package name is a literal. None for a path. */
  load?: () => Promise<unknown>;
}

type Fn = (...args: never[]) => unknown;

/** What a Zebric 0.6 plugin module exports (its `Plugin` type), as far as bp runs it. */
export interface PluginModule {
  name: string;
  version: string;
  provides: Readonly<Record<string, unknown>>;
  init?: (engine: unknown, config: Record<string, unknown>) => unknown;
  workflows?: Readonly<Record<string, Fn>>;
  fieldValidators?: Readonly<Record<string, Fn>>;
  actionHandlers?: Readonly<Record<string, Fn>>;
  middleware?: Readonly<Record<string, Fn>>;
  layouts?: Readonly<Record<string, Fn>>;
}

/** The members holding functions by name; each must be an object of functions when present. */
const FUNCTION_TABLES = ['workflows', 'fieldValidators', 'actionHandlers', 'middleware', 'layouts'] as const;

/**
 * Imports the entry's package (or its `file:` folder, or the module its path names) and checks its
 * shape; throws naming the plugin.
 */
export async function importPlugin(entry: PluginEntry, appDir: string): Promise<PluginModule> {
  if (!entry.load) return checkShape(entry, loadLocal(entry, appDir));
  let loaded: unknown;
  try {
    loaded = await entry.load();
  } catch (err) {
    if (!isMissing(err, entry.name)) throw failure(entry, `its package failed to load: ${messageOf(err)}`);
    if (entry.localPath === undefined) {
      throw failure(
        entry,
        `its package is not installed: run npm install (package.json lists "${entry.name}": "${entry.dependency}")`,
      );
    }
    // Not installed yet (npm install links a file: dependency into node_modules; the tests' apps
    // share bp's node_modules and are never installed): the folder itself.
    loaded = loadLocal(entry, appDir);
  }
  return checkShape(entry, loaded);
}

/**
 * A plugin's module from its path: a folder's package entry, or a file. Loaded with require, which
 * Node 20.19 and later apply to ES modules too (except those with top-level await): the runtime's
 * import() names only literals (generator/emit/runtime.ts).
 */
function loadLocal(entry: PluginEntry, appDir: string): unknown {
  const target = path.resolve(appDir, entry.localPath ?? '.');
  const main = fs.statSync(target, { throwIfNoEntry: false })?.isDirectory() ? entryFile(target) : target;
  if (main === undefined) throw failure(entry, `${target} holds no package.json: it is not a package`);
  if (!fs.existsSync(main)) throw failure(entry, `${main} does not exist`);
  try {
    return createRequire(main)(main);
  } catch (err) {
    throw failure(entry, `its module at ${main} failed to load: ${messageOf(err)}`);
  }
}

/** The module's plugin (its default export, else the module itself), checked as Zebric's registry does, and more. */
function checkShape(entry: PluginEntry, loaded: unknown): PluginModule {
  const module = loaded as Record<string, unknown>;
  const plugin = (isObject(module.default) ? module.default : module) as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof plugin.name !== 'string' || plugin.name === '') problems.push('no name (a string)');
  if (typeof plugin.version !== 'string' || plugin.version === '') problems.push('no version (a string)');
  if (!isObject(plugin.provides)) problems.push('no provides (an object)');
  if (plugin.init !== undefined && typeof plugin.init !== 'function') problems.push('init is not a function');
  for (const key of FUNCTION_TABLES) {
    const table = plugin[key];
    if (table === undefined) continue;
    if (!isObject(table)) problems.push(`${key} is not an object of functions`);
    else {
      for (const [name, fn] of Object.entries(table))
        if (typeof fn !== 'function') problems.push(`${key}.${name} is not a function`);
    }
  }
  if (problems.length) throw failure(entry, `its module is not a plugin: ${problems.join('; ')}`);
  return plugin as unknown as PluginModule;
}

/** The file a folder's package.json names as its entry (exports, else main, else index.js). */
function entryFile(folder: string): string | undefined {
  let manifest: Record<string, unknown>;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const exported = isObject(manifest.exports) ? manifest.exports['.'] : manifest.exports;
  const target = isObject(exported) ? (exported.import ?? exported.default) : exported;
  const file = typeof target === 'string' ? target : typeof manifest.main === 'string' ? manifest.main : 'index.js';
  return path.resolve(folder, file);
}

/** Whether `err` says that the package itself is missing (not a module it imports). */
function isMissing(err: unknown, name: string): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && messageOf(err).includes(`'${name}'`);
}

function failure(entry: PluginEntry, reason: string): Error {
  return new Error(`plugin "${entry.name}" ([[plugins]]): ${reason}`);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
