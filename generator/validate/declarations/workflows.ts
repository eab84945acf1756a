// Rules on one workflow declaration: its trigger is exactly one of the four forms, a schedule is
// a cron expression, and each step (nested ones included) uses the keys of its type.

import type { CompileContext } from '../../context.ts';
import { triggerForms } from '../../model/build-sections.ts';
import { table, type Raw } from '../../model/raw.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { checkConditionOperators } from './condition-operators.ts';
import { cronProblem } from './cron.ts';
import { checkSteps } from './workflow-steps.ts';

export function checkWorkflow(ctx: CompileContext, name: string, raw: Raw): void {
  const at: KeyPath = ['workflow', name, 'trigger'];
  const t = table(raw.trigger);
  const forms = triggerForms(t);
  if (forms.length !== 1) {
    ctx.report(
      'INVALID_TRIGGER',
      at,
      'a trigger is exactly one of { manual = true }, { entity, event }, { webhook = "/webhooks/..." } ' +
        'or { schedule = "<cron>" }',
    );
  } else if (forms[0] === 'entity') {
    if (t.entity === undefined || t.event === undefined)
      ctx.report('INVALID_TRIGGER', at, 'an entity trigger needs both entity and event');
  } else if (forms[0] === 'manual' && t.manual !== true) {
    ctx.report('INVALID_TRIGGER', [...at, 'manual'], 'manual must be true when given');
  } else if (forms[0] === 'schedule' && typeof t.schedule === 'string') {
    const problem = cronProblem(t.schedule);
    if (problem) {
      ctx.report(
        'INVALID_SCHEDULE',
        [...at, 'schedule'],
        `schedule "${t.schedule}" is not a cron expression: ${problem}`,
        {
          hint:
            'five fields (minute hour day-of-month month day-of-week), six with seconds first, ' +
            'or @hourly, @daily, @weekly, @monthly, @yearly',
        },
      );
    }
  }
  checkConditionOperators(ctx, ['workflow', name, 'precondition'], raw.precondition, false);
  checkConditionOperators(ctx, [...at, 'condition'], t.condition, false);
  checkSteps(ctx, ['workflow', name, 'steps'], raw.steps);
}
