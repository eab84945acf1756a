// [[plugins]]: an enabled entry names an npm package the generated app imports, so its name must
// be one; every workflow plugin step must name a declared, enabled plugin once the blueprint has
// a [[plugins]] section (without one, steps run what src/extend.ts registers, which bp cannot see:
// not-generated.ts reminds of it); a field's `validators` need an enabled plugin to provide them;
// a `file:` plugin's folder (relative to the root blueprint's folder) must hold a package.json.

import * as path from 'node:path';
import type { CompileContext } from '../../context.ts';
import { list, namedSections, table } from '../../model/raw.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';

/** An npm package name, scoped or not (lower case, no path segments beyond the scope). */
const PACKAGE_NAME = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;

export function checkPlugins(ctx: CompileContext): void {
  const plugins = namedSections(ctx.parsed, 'plugin');
  const enabled = plugins.filter((p) => p.value.enabled === true).map((p) => p.name);
  for (const { name, value } of plugins) {
    // Zebric also loads a module by its path (`./plugins/audit.js`), relative to the root blueprint here.
    const byPath = name.startsWith('./') || name.startsWith('../');
    if (value.enabled === true && byPath) {
      const target = path.resolve(ctx.parsed.rootDir, name);
      const found =
        ctx.host.readFile(target) !== undefined || ctx.host.readFile(path.join(target, 'package.json')) !== undefined;
      if (!found) {
        ctx.report('PLUGIN_NOT_FOUND', ['plugin', name, 'name'], `${ctx.host.display(target)} does not exist`, {
          hint:
            "a plugin named by a path is a module file, or a package's folder, " +
            "relative to the root blueprint's folder",
        });
      }
      continue;
    }
    if (value.enabled === true && (!PACKAGE_NAME.test(name) || name.length > 214)) {
      ctx.report('INVALID_NAME', ['plugin', name, 'name'], `plugin "${name}" is not an npm package name`, {
        hint:
          'an enabled plugin names the npm package the app loads, such as "crm-sync" or "@team/crm-sync", ' +
          'or a module by its path, "./plugins/crm.js"',
      });
    }
    if (value.enabled === true && typeof value.version === 'string' && value.version.startsWith('file:')) {
      const folder = path.resolve(ctx.parsed.rootDir, value.version.slice('file:'.length));
      if (ctx.host.readFile(path.join(folder, 'package.json')) === undefined) {
        ctx.report(
          'PLUGIN_NOT_FOUND',
          ['plugin', name, 'version'],
          `${ctx.host.display(folder)} holds no package.json`,
          {
            hint: "a file: version is the plugin package's folder, relative to the root blueprint's folder",
          },
        );
      }
    }
  }
  if (plugins.length > 0) {
    const disabled = new Set(plugins.filter((p) => p.value.enabled !== true).map((p) => p.name));
    for (const { name, value } of namedSections(ctx.parsed, 'workflow'))
      checkSteps(ctx, ['workflow', name, 'steps'], value.steps, enabled, disabled);
  }
  for (const { name, value } of namedSections(ctx.parsed, 'entity')) {
    list(value.fields).forEach((raw, i) => {
      const field = table(raw);
      if (field.validators !== undefined && enabled.length === 0) {
        ctx.report(
          'PLUGIN_NOT_DECLARED',
          ['entity', name, 'fields', i, 'validators'],
          `field "${String(field.name)}" names plugin field validators, but no plugin is enabled`,
          { hint: 'enable the plugin that provides them: [[plugins]] with name, version and enabled = true' },
        );
      }
    });
  }
}

/** Each plugin step, nested ones (then, else, do) included, names an enabled plugin. */
function checkSteps(
  ctx: CompileContext,
  at: KeyPath,
  steps: unknown,
  enabled: readonly string[],
  disabled: ReadonlySet<string>,
): void {
  list(steps).forEach((raw, i) => {
    const step = table(raw);
    const here = [...at, i];
    if (step.type === 'plugin' && typeof step.plugin === 'string' && !enabled.includes(step.plugin)) {
      const plugin = step.plugin;
      ctx.report(
        'PLUGIN_NOT_DECLARED',
        [...here, 'plugin'],
        disabled.has(plugin)
          ? `plugin "${plugin}" is declared with enabled = false: this step could never run`
          : `plugin "${plugin}" is not declared in [[plugins]]`,
        {
          hint:
            didYouMean(plugin, enabled) ??
            (disabled.has(plugin) ? 'set enabled = true' : 'declare it: [[plugins]] with its name and enabled = true'),
        },
      );
    }
    for (const branch of ['then', 'else', 'do']) checkSteps(ctx, [...here, branch], step[branch], enabled, disabled);
  });
}
