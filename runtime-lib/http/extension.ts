// The contract of src/extend.ts, the one file of a generated app that belongs to its team: bp
// scaffolds it once and never changes it. Through it a team adds middleware for every request,
// routes of its own, services for command handlers, the delegation hook, senders of notification
// adapters and the actions of plugin workflow steps, without editing a generated file. src/app.ts
// checks the extension once at start and composes it.

import type { Router } from 'express';
import type { Actor } from '../core/actor.ts';
import type { Database } from '../data/database.ts';
import type { EventBus } from '../commands/events.ts';
import type { Notification, PluginAction } from '../commands/workflow-contract.ts';
import type { ApiRequest, Middleware } from './request.ts';

/** What `routes` gets besides the router: the app's own database and event bus. */
export interface ExtensionContext {
  /**
   * The app's database, SQLite or PostgreSQL (data/database.ts): `db.read(work)` and
   * `db.write(() => work)` run units of work, `yield* get(sql, params)` and friends, with `?`
   * placeholders on both. No access rule applies to what you run on it: check it yourself.
   */
  db: Database;
  /** Events of committed commands: `events.subscribe((event) => ...)`. */
  events: EventBus;
}

export interface Extension {
  /**
   * Steps run, in order, for every request (the entity and command routes included), after its
   * trace starts and BEFORE credentials are checked: `req.actor` is not known yet (read it in a
   * `res.on('finish', ...)` listener), the body is not read yet (leave the stream alone). They get
   * node's request and response, not Express's (no `req.path`, no `res.json`). Call `next()` to go
   * on, `next(err)` to answer with the error envelope (an `AppError` keeps its status), or answer
   * yourself without calling `next` (a CORS preflight, say); no credential is checked then.
   */
  middleware?: readonly Middleware[];
  /**
   * Adds routes to an Express router served after the generated routes (which win on the same
   * path), behind the whole pipeline: `req.actor` is known, a session's mutations passed CSRF.
   * No access rule of the blueprint applies to these routes: check `req.actor` yourself.
   */
  routes?: (router: Router, app: ExtensionContext) => void;
  /**
   * Handed to every command handler as `ctx.services`. The operations of the blueprint's
   * [service.*] sections are here too, as `services.<service>.<operation>(input, { workflow, jobId })`:
   * workflow service steps call them with the input the blueprint declares (checked), and their
   * result is checked against the declared result. An operation missing here fails the job at
   * its step (WORKFLOW_STEP_NOT_SUPPORTED).
   */
  services?: Readonly<Record<string, unknown>>;
  /**
   * The trusted delegation hook: for an authenticated actor, return the id of the person on
   * whose behalf it acts, from something your code verified (never a header taken as is); it
   * becomes `actor.delegatedBy` in audit records. Undefined: the actor acts for itself.
   */
  delegate?: (req: ApiRequest, actor: Actor) => string | undefined;
  /**
   * Senders of the blueprint's [notifications] adapters, by adapter name: `notifications: { team:
   * async (message, config) => ... }`, `config` being the adapter's own table of the blueprint. One
   * is needed for a type that is not built in (`console`, `email` and `slack` are), and wins over a
   * built-in one. A notify step through an adapter without a sender fails its job
   * (WORKFLOW_STEP_NOT_SUPPORTED); a sender that throws fails it too.
   */
  notifications?: Readonly<Record<string, NotificationSender>>;
  /**
   * The actions plugin workflow steps run, by plugin and action name (the step's `plugin` and
   * `action_name`): `plugins: { crm: { upsert: async (params, ctx) => ... } }`. `params` is the
   * step's `params`, templates resolved; `ctx` names the workflow, the job and its actor, with a
   * copy of the run's context. What the action resolves to is the step's result (assignTo), and
   * must be JSON. A step whose action is not registered fails its job (WORKFLOW_STEP_NOT_SUPPORTED);
   * an action that throws fails it too (an AppError keeps its code: a retryable one is retried).
   * The `workflows` of the blueprint's enabled [[plugins]] packages are actions too (plugins/host.ts);
   * one registered here wins over a package's of the same plugin and action name.
   */
  plugins?: Readonly<Record<string, Readonly<Record<string, PluginAction>>>>;
}

export type NotificationSender = (message: Notification, config: Readonly<Record<string, unknown>>) => Promise<void>;

/** Types the default export of src/extend.ts: `export default defineExtension({ ... })`. */
export function defineExtension(extension: Extension): Extension {
  return extension;
}

/**
 * Checks an extension's shape when the app starts, so a mistake in src/extend.ts stops the app
 * with a message naming it instead of failing on some later request.
 */
export function checkExtension(extension: unknown): Extension {
  const where = 'src/extend.ts';
  if (extension === undefined) return {};
  if (!isPlainObject(extension)) throw new Error(`${where} must export default defineExtension({ ... })`);
  const known = new Set(['middleware', 'routes', 'services', 'delegate', 'notifications', 'plugins']);
  const unknown = Object.keys(extension).filter((key) => !known.has(key));
  if (unknown.length) {
    const expected = [...known].join(', ');
    throw new Error(`${where}: unknown key(s) ${unknown.join(', ')} (expected ${expected})`);
  }
  const { middleware, routes, services, delegate, notifications, plugins } = extension as Record<string, unknown>;
  if (plugins !== undefined) {
    if (!isPlainObject(plugins)) throw new Error(`${where}: plugins must be an object of plugins`);
    for (const [plugin, actions] of Object.entries(plugins)) {
      if (!isPlainObject(actions)) throw new Error(`${where}: plugins.${plugin} must be an object of functions`);
      for (const [action, run] of Object.entries(actions)) {
        if (typeof run !== 'function') throw new Error(`${where}: plugins.${plugin}.${action} is not a function`);
      }
    }
  }
  if (notifications !== undefined) {
    if (!isPlainObject(notifications)) throw new Error(`${where}: notifications must be an object of functions`);
    for (const [name, send] of Object.entries(notifications)) {
      if (typeof send !== 'function') throw new Error(`${where}: notifications.${name} is not a function`);
    }
  }
  if (middleware !== undefined) {
    if (!Array.isArray(middleware)) throw new Error(`${where}: middleware must be an array of functions`);
    middleware.forEach((step, i) => {
      if (typeof step !== 'function') throw new Error(`${where}: middleware[${i}] is not a function`);
    });
  }
  for (const [key, value] of Object.entries({ routes, delegate })) {
    if (value !== undefined && typeof value !== 'function') throw new Error(`${where}: ${key} must be a function`);
  }
  if (services !== undefined && !isPlainObject(services)) throw new Error(`${where}: services must be an object`);
  return extension as Extension;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
