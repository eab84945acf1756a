// src/plugins.ts: the enabled [[plugins]], each with the import() of its package written as a
// literal (the runtime's modules never import a computed name), and the dependencies they add
// to package.json.

import * as path from 'node:path';
import type { Blueprint, Plugin, WorkflowStep } from '../model/types.ts';
import { render } from './templates.ts';
import { code, tsLiteral, tsString } from './ts-literal.ts';

/** A plugin's range in package.json (a `file:` folder written relative to the app); none for a module path. */
export function pluginDependency(plugin: Plugin, outDir: string): string | undefined {
  if (plugin.dependency === undefined || plugin.localPath === undefined) return plugin.dependency;
  return `file:${localPath(plugin.localPath, outDir)}`;
}

/** src/plugins.ts and its module declarations, or nothing when no plugin is enabled. */
export function emitPlugins(bp: Blueprint, outDir: string): Map<string, string> {
  if (bp.plugins.length === 0) return new Map();
  const entries = bp.plugins.map((p) => ({
    name: p.name,
    dependency: pluginDependency(p, outDir),
    localPath: p.localPath === undefined ? undefined : localPath(p.localPath, outDir),
    trustLevel: p.trustLevel,
    capabilities: p.capabilities,
    config: p.config,
    load: p.dependency === undefined ? undefined : code(`() => import(${tsString(p.name)})`),
  }));
  const lead = 'export const PLUGINS: PluginEntry[] = '.length;
  const packages = bp.plugins.filter((p) => p.dependency !== undefined).map((p) => p.name);
  return new Map([
    [
      'src/plugins.ts',
      render('app/src/plugins.ts.hbs', {
        plugins: tsLiteral(entries, { lead, trail: 1 }),
        steps: tsLiteral(pluginSteps(bp), { lead: 'export const PLUGIN_STEPS: PluginStep[] = '.length, trail: 1 }),
      }),
    ],
    ...(packages.length
      ? [['src/plugin-packages.d.ts', render('app/src/plugin-packages.d.ts.hbs', { names: packages })] as const]
      : []),
  ]);
}

/** The plugin steps of every workflow, nested ones too, in order: the app checks their actions at start. */
function pluginSteps(bp: Blueprint): Array<{ workflow: string; plugin: string; action: string }> {
  const found: Array<{ workflow: string; plugin: string; action: string }> = [];
  const walk = (workflow: string, steps: readonly WorkflowStep[]): void => {
    for (const step of steps) {
      const { plugin, action_name: action } = step.spec;
      if (step.type === 'plugin' && typeof plugin === 'string' && typeof action === 'string')
        found.push({ workflow, plugin, action });
      for (const branch of Object.values(step.branches)) walk(workflow, branch);
    }
  };
  for (const w of bp.workflows) walk(w.name, w.steps);
  return found;
}

/** `folder` (or a module) relative to the app, with '/' separators. */
function localPath(folder: string, outDir: string): string {
  const relative = path.relative(outDir, folder).split(path.sep).join('/');
  return relative.startsWith('.') ? relative : `./${relative}`;
}
