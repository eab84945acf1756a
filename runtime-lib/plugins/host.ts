// The plugins of an app, once loaded: their workflow actions (run by workflow plugin steps), their
// middleware (a step of every request, after the trace), their field validators (run on every
// write of a field that names them) and what the development admin server lists. createApp makes
// the host before anything is served; `start()` loads the plugins and calls each one's init.

import { EventEmitter } from 'node:events';
import type { ErrorDetail } from '../core/errors.ts';
import type { PluginAction, PluginContext } from '../commands/workflow-contract.ts';
import type { FieldCheck } from '../data/entity-store.ts';
import type { Middleware } from '../http/request.ts';
import { type EngineDeps, engineApi, PluginCache } from './engine-api.ts';
import { importPlugin, type PluginEntry, type PluginModule } from './load.ts';

/** A workflow's plugin step, as src/plugins.ts lists them. */
export interface PluginStep {
  workflow: string;
  plugin: string;
  action: string;
}

export interface PluginHostOptions extends Omit<EngineDeps, 'events' | 'cache' | 'blueprint'> {
  entries: readonly PluginEntry[];
  /** The workflows' plugin steps: the actions of those naming a loaded plugin must exist. */
  steps: readonly PluginStep[];
  /** project.name, for `engine.blueprint`. */
  projectName: string;
  /** The actions src/extend.ts registers (plugins.<plugin>.<action>): they win over a plugin's own. */
  extension?: Readonly<Record<string, Readonly<Record<string, PluginAction>>>>;
  warn: (message: string) => void;
}

/** A loaded plugin as the admin server lists it. */
export interface LoadedPlugin {
  name: string;
  version: string;
  trustLevel: 'limited' | 'full';
  capabilities: readonly string[];
  provides: Readonly<Record<string, unknown>>;
}

type ZebricMiddleware = (request: unknown, reply: unknown, engine: unknown) => unknown;
type ZebricValidator = (context: Record<string, unknown>) => unknown;

export class PluginHost {
  /** By plugin and action: what workflow plugin steps run (merged with src/extend.ts's by createApp). */
  readonly actions: Record<string, Record<string, PluginAction>> = {};
  readonly loaded: LoadedPlugin[] = [];
  private readonly steps: Array<{ run: ZebricMiddleware; engine: unknown }> = [];
  private readonly validators = new Map<string, { plugin: string; check: ZebricValidator }>();

  constructor(private readonly options: PluginHostOptions) {
    for (const [plugin, actions] of Object.entries(options.extension ?? {})) this.actions[plugin] = { ...actions };
  }

  /** Loads every plugin in order and calls its init; throws naming the plugin at the first that fails. */
  async start(): Promise<void> {
    const { entries, warn, projectName, extension: _extension, steps: _steps, ...deps } = this.options;
    const shared = {
      ...deps,
      blueprint: blueprintView(projectName, deps.stores, entries),
      events: new EventEmitter(),
      cache: new PluginCache(),
    };
    for (const entry of entries) {
      const plugin = await importPlugin(entry, deps.appDir);
      if (entry.trustLevel === 'full') warn(`plugin "${entry.name}" has trust_level "full": every capability`);
      const engine = engineApi(entry, shared);
      try {
        await plugin.init?.(engine, structuredClone({ ...entry.config }));
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        throw new Error(`plugin "${entry.name}" ([[plugins]]): its init failed: ${why}`, { cause: err });
      }
      this.register(entry, plugin, engine);
    }
    this.checkFieldValidators();
    this.checkSteps();
  }

  /** The plugins' middleware, in declaration order, as one step of the request pipeline. */
  readonly middleware: Middleware = async (req, res, next) => {
    try {
      for (const step of this.steps) {
        await step.run(req, res, step.engine);
        // A middleware that answered ends the request, as Zebric's reply does.
        if (res.headersSent || res.writableEnded) return;
      }
    } catch (err) {
      next(err);
      return;
    }
    next();
  };

  /**
   * The entity stores' check of fields that name validators: the plugin's answer, a message,
   * refuses the write (400 VALIDATION_FAILED, detail FIELD_VALIDATOR). Stores run it inside the
   * write's unit of work, so it must answer at once: a validator returning a promise fails the write.
   */
  readonly fieldCheck: FieldCheck = (entity, field, value, data) => {
    const issues: ErrorDetail[] = [];
    for (const name of field.validators ?? []) {
      const validator = this.validators.get(name);
      if (!validator) throw new Error(`field validator "${name}" of ${entity.name}.${field.name} is not loaded`);
      const answer = validator.check({ field, value, data, entity, session: null });
      if (answer instanceof Promise || (typeof answer === 'object' && answer !== null && 'then' in answer)) {
        throw new Error(
          `field validator "${name}" of plugin "${validator.plugin}" answered asynchronously: bp runs field ` +
            'validators inside the write and needs their answer at once',
        );
      }
      if (typeof answer === 'string' && answer !== '')
        issues.push({ field: field.name, code: 'FIELD_VALIDATOR', message: `${field.name}: ${answer}` });
    }
    return issues;
  };

  private register(entry: PluginEntry, plugin: PluginModule, engine: Record<string, unknown>): void {
    const actions: Record<string, PluginAction> = {};
    for (const [name, run] of Object.entries(plugin.workflows ?? {})) {
      // Zebric's WorkflowContext (db, storage, cache, log: as granted) with bp's job and run context.
      actions[name] = (params: unknown, ctx: PluginContext) => {
        const context = Object.create(engine, Object.getOwnPropertyDescriptors(ctx));
        return Promise.resolve((run as (p: unknown, c: unknown) => unknown)(params, context));
      };
    }
    // src/extend.ts's actions of the same name win: the team's code overrides a package's.
    this.actions[entry.name] = { ...actions, ...this.actions[entry.name] };
    for (const run of Object.values(plugin.middleware ?? {})) this.steps.push({ run: run as ZebricMiddleware, engine });
    for (const [name, check] of Object.entries(plugin.fieldValidators ?? {})) {
      const other = this.validators.get(name);
      if (other) {
        throw new Error(
          `plugins "${other.plugin}" and "${entry.name}" both provide the field validator "${name}": ` +
            'a field could not say which it means',
        );
      }
      this.validators.set(name, { plugin: entry.name, check: check as ZebricValidator });
    }
    this.loaded.push({
      name: entry.name,
      version: plugin.version,
      trustLevel: entry.trustLevel,
      capabilities: entry.trustLevel === 'full' ? ['database', 'network', 'storage', 'filesystem'] : entry.capabilities,
      provides: plugin.provides,
    });
  }

  /**
   * Every plugin step naming a loaded plugin runs an action it (or src/extend.ts) has: refused at
   * start, not when a job reaches the step. A step naming a plugin that is not enabled is refused
   * by bp validate, unless the blueprint has no [[plugins]] (src/extend.ts's actions, then).
   */
  private checkSteps(): void {
    const loaded = new Set(this.loaded.map((p) => p.name));
    for (const { workflow, plugin, action } of this.options.steps) {
      const actions = this.actions[plugin] ?? {};
      if (!loaded.has(plugin) || Object.hasOwn(actions, action)) continue;
      const has = Object.keys(actions).join(', ') || 'none';
      throw new Error(
        `workflow ${workflow} runs ${plugin}.${action}, which plugin "${plugin}" does not provide ` +
          `(its workflows: ${has}) and src/extend.ts does not register`,
      );
    }
  }

  /** Every validator a field names must be loaded: refused at start, not on the first write. */
  private checkFieldValidators(): void {
    for (const store of this.options.stores.values()) {
      for (const field of store.spec.fields) {
        for (const name of field.validators ?? []) {
          if (!this.validators.has(name)) {
            const loaded = [...this.validators.keys()].join(', ') || 'none';
            throw new Error(
              `${store.spec.name}.${field.name} names the field validator "${name}", which no enabled plugin ` +
                `provides (loaded: ${loaded})`,
            );
          }
        }
      }
    }
  }
}

/**
 * `engine.blueprint`: what a generated app knows of its blueprint (it reads no blueprint file):
 * the project's name, the entities with their fields, the plugins. Frozen: read-only, as Zebric's.
 */
function blueprintView(
  name: string,
  stores: PluginHostOptions['stores'],
  entries: readonly PluginEntry[],
): Readonly<Record<string, unknown>> {
  const view = {
    project: { name },
    entities: [...stores.values()].map(({ spec }) => ({
      name: spec.name,
      fields: spec.fields.map((f) => ({ name: f.name, type: f.type, required: f.required })),
    })),
    plugins: entries.map(({ name: plugin, trustLevel, capabilities, config }) => ({
      name: plugin,
      enabled: true,
      trust_level: trustLevel,
      capabilities,
      config,
    })),
  };
  return deepFreeze(structuredClone(view));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
