// Rules on one workflow declaration: its trigger is exactly one of the three forms.

import type { CompileContext } from '../../context.ts';
import { triggerForms } from '../../model/build-sections.ts';
import { table, type Raw } from '../../model/raw.ts';
import type { KeyPath } from '../../parse/locate.ts';

export function checkWorkflow(ctx: CompileContext, name: string, raw: Raw): void {
  const at: KeyPath = ['workflow', name, 'trigger'];
  const t = table(raw.trigger);
  if (triggerForms(t) !== 1) {
    ctx.report('INVALID_TRIGGER', at, 'a trigger is exactly one of { manual = true }, { entity, event } or { webhook = "/webhooks/..." }');
  } else if (t.webhook === undefined && (t.entity !== undefined || t.event !== undefined)) {
    if (t.entity === undefined || t.event === undefined) ctx.report('INVALID_TRIGGER', at, 'an entity trigger needs both entity and event');
  } else if (t.webhook === undefined && t.manual !== true) {
    ctx.report('INVALID_TRIGGER', [...at, 'manual'], 'manual must be true when given');
  }
}
