// Sections bp accepts (so Zebric blueprints validate) but does not generate yet: one warning per
// declaration, so nobody expects a route or a plugin that the generated app does not have.
// Everything inside such a declaration is covered by its warning. Also reminders
// of what the app's src/extend.ts must provide for what the blueprint declares: service
// operations, plugin step actions when there is no [[plugins]] section (with one, plugins.ts
// checks the steps), senders of notification adapters of a type not built in.

import type { CompileContext } from '../../context.ts';
import { triggerForms } from '../../model/build-sections.ts';
import { list, namedSections, singleSection, table } from '../../model/raw.ts';

/** Notification adapter types the app sends through by itself (runtime/workflows/notify.ts). */
const BUILT_IN_TYPES: readonly string[] = ['console', 'email', 'slack'];

export function notGenerated(ctx: CompileContext): void {
  const warn = (keys: (string | number)[], message: string) =>
    ctx.report('NOT_GENERATED', keys, message, { severity: 'warning' });
  for (const { name } of namedSections(ctx.parsed, 'service')) {
    warn(
      ['service', name],
      `service "${name}" runs the operations src/extend.ts implements (services.${name}.<operation>); ` +
        'without them the service steps calling them fail',
    );
  }
  // A skill action starts a workflow by hand, also one a webhook or a schedule starts (the app
  // serves it: runtime/http/skill-routes.ts); one that entity events start runs only on them.
  const triggers = new Map(
    namedSections(ctx.parsed, 'workflow').map(({ name, value }) => [name, triggerForms(table(value.trigger))]),
  );
  for (const { name, value } of namedSections(ctx.parsed, 'skill')) {
    list(value.actions).forEach((raw, i) => {
      const action = table(raw);
      const forms = typeof action.workflow === 'string' ? triggers.get(action.workflow) : undefined;
      if (forms?.length === 1 && forms[0] === 'entity') {
        const label = typeof action.name === 'string' ? `"${action.name}"` : String(i);
        warn(
          ['skill', name, 'actions', i, 'workflow'],
          `skill action ${label} starts workflow "${String(action.workflow)}", which its entity event ` +
            "starts, not a caller: the action's route is not served",
        );
      }
    });
  }
  if (namedSections(ctx.parsed, 'plugin').length === 0) {
    for (const { name, value } of namedSections(ctx.parsed, 'workflow')) {
      stepWarnings(warn, name, ['workflow', name, 'steps'], value.steps);
    }
  }
  const auth = singleSection(ctx.parsed, 'auth');
  list(auth.providers).forEach((provider, i) => {
    if (typeof provider === 'string' && provider !== '' && provider !== 'email') {
      warn(
        ['auth', 'providers', i],
        `auth provider "${provider}" is accepted but not generated yet: only "email" signs people in`,
      );
    }
  });
  list(table(singleSection(ctx.parsed, 'notifications')).adapters).forEach((raw, i) => {
    const { name, type } = table(raw);
    if (typeof type === 'string' && !BUILT_IN_TYPES.includes(type)) {
      warn(
        ['notifications', 'adapters', i, 'type'],
        `notification adapter "${String(name)}" of type "${type}" is not built in: ` +
          `register its sender in src/extend.ts (notifications.${String(name)}), or notify steps through it fail`,
      );
    }
  });
}

/** Per step, nested ones (then, else, do) included: a plugin action the app must register. */
function stepWarnings(
  warn: (keys: (string | number)[], message: string) => void,
  workflow: string,
  at: (string | number)[],
  steps: unknown,
): void {
  list(steps).forEach((raw, i) => {
    const step = table(raw);
    const here = [...at, i];
    const action = step.action_name ?? step.action;
    if (step.type === 'plugin' && typeof step.plugin === 'string' && typeof action === 'string') {
      warn(
        here,
        `plugin steps run the action src/extend.ts registers (plugins.${step.plugin}.${action}); ` +
          `without it a job of "${workflow}" fails at this step`,
      );
    }
    for (const branch of ['then', 'else', 'do']) stepWarnings(warn, workflow, [...here, branch], step[branch]);
  });
}
