// What a known actor may start besides entity writes, as the running app admits it: skill actions
// (runtime-lib/http/skill-routes.ts), commands (runtime-lib/commands/executor.ts) and the
// workflows these and entity writes start. People are not held to scopes, so for a person only
// the skill's `auth`, the entity's rules, a command's policy and availableWhen decide; each is
// read three-valued, and "maybe" counts as "may" (it depends on the record).

import type { CompileContext } from '../../context.ts';
import { actionRisk } from '../../model/action-risk.ts';
import type { Blueprint, Command, EntityAction, Skill, SkillAction, SkillRisk } from '../../model/types.ts';
import { pathParams } from '../../../runtime-lib/core/path-params.ts';
import { mayAct } from './may-act.ts';
import { and, mayHold, type ActorFacts, type Tri } from './three-valued.ts';

export interface StartableAction {
  skill: Skill;
  action: SkillAction;
  risk: SkillRisk;
}

const may = (t: Tri | undefined): boolean => t !== undefined && t !== 'no';

/** The entity action a CRUD skill action performs. */
const CRUD: Record<NonNullable<SkillAction['action']>, EntityAction> = {
  list: 'read',
  get: 'read',
  create: 'create',
  update: 'update',
  delete: 'delete',
};

/**
 * The skill actions `actor` may call that change something or start a workflow: CRUD actions
 * other than reads whose entity rule may let it, and workflow actions the app serves (a workflow
 * not started by entity events) whose record, when its path names one, it may read.
 */
export function startableActions(ctx: CompileContext, bp: Blueprint, actor: ActorFacts): StartableAction[] {
  const found: StartableAction[] = [];
  for (const skill of bp.skills) {
    for (const action of skill.actions) {
      if (ctx.failed(action.path)) continue;
      const entity = action.entity === undefined ? undefined : bp.entities.find((e) => e.name === action.entity);
      const risk = actionRisk(action);
      if (action.workflow !== undefined) {
        const workflow = bp.workflows.find((w) => w.name === action.workflow);
        if (!workflow || workflow.trigger.kind === 'entity') continue;
        const key = entity?.primaryKey.name;
        const readsRecord =
          key !== undefined && pathParams(action.route).some((p) => (action.mapParams[p] ?? p) === key);
        if (readsRecord && !may(mayAct(ctx, bp, entity!, 'read', actor))) continue;
        found.push({ skill, action, risk });
      } else if (action.action !== undefined && entity && CRUD[action.action] !== 'read') {
        if (may(mayAct(ctx, bp, entity, CRUD[action.action], actor))) found.push({ skill, action, risk });
      }
    }
  }
  return found;
}

/** The commands `actor` may run: it may read the record, and policy and availableWhen may hold. */
export function runnableCommands(ctx: CompileContext, bp: Blueprint, actor: ActorFacts): Command[] {
  return bp.commands.filter((command) => {
    const entity = bp.entities.find((e) => e.name === command.entity);
    if (!entity || ctx.failed(command.path)) return false;
    const conditions = [command.policy, command.availableWhen].flatMap((rule) =>
      rule ? [mayHold(rule.condition, actor)] : [],
    );
    return may(mayAct(ctx, bp, entity, 'read', actor)) && may(and(conditions));
  });
}

/**
 * The workflows `actor` may start: those of the skill actions it may call, and those started by
 * an entity event on a write it may make. Each with how it starts.
 */
export function startableWorkflows(
  ctx: CompileContext,
  bp: Blueprint,
  actor: ActorFacts,
  actions: readonly StartableAction[],
): string[] {
  return bp.workflows.flatMap((workflow) => {
    const { trigger } = workflow;
    if (trigger.kind === 'entity') {
      const entity = bp.entities.find((e) => e.name === trigger.entity);
      return entity && may(mayAct(ctx, bp, entity, trigger.event, actor))
        ? [`${workflow.name} (on ${trigger.entity} ${trigger.event})`]
        : [];
    }
    const by = actions
      .filter((a) => a.action.workflow === workflow.name)
      .map((a) => `${a.skill.name}.${a.action.name}`);
    return by.length ? [`${workflow.name} (by ${by.join(', ')})`] : [];
  });
}
