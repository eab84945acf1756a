// Sections bp accepts (so Zebric blueprints validate) but does not generate yet: one warning per
// declaration, so nobody expects a route or a job that the generated app does not have.

import type { CompileContext } from '../../context.ts';
import { namedSections, table } from '../../model/raw.ts';

export function notGenerated(ctx: CompileContext): void {
  const warn = (keys: (string | number)[], message: string) => ctx.report('NOT_GENERATED', keys, message, { severity: 'warning' });
  for (const { name } of namedSections(ctx.parsed, 'skill')) {
    warn(['skill', name], `skill "${name}" is accepted but not generated yet: its actions are not served`);
  }
  for (const { name, value } of namedSections(ctx.parsed, 'workflow')) {
    warn(['workflow', name], `workflow "${name}" is accepted but not generated yet: it never runs`);
    const webhook = table(value.trigger).webhook;
    if (typeof webhook === 'string') {
      warn(['workflow', name, 'trigger', 'webhook'], `webhook ${webhook} is accepted but not served yet: requests to it get 404`);
    }
  }
  for (const { name } of namedSections(ctx.parsed, 'page')) {
    warn(['page', name], `page "${name}" is accepted but not generated yet: nothing is served at this path`);
  }
  if (ctx.parsed.sections.some((s) => s.kind === 'notifications')) {
    warn(['notifications'], '[notifications] is accepted but not used yet: only workflows send notifications');
  }
}
