// src/skills.ts: every skill of the blueprint as a spec for runtime/http/skill-routes.ts.

import { actionRisk } from '../model/action-risk.ts';
import type { Blueprint } from '../model/types.ts';
import { requiredBodyKeys } from '../model/workflows.ts';
import { render } from './templates.ts';
import { nonEmpty, tsLiteral } from './ts-literal.ts';

export function emitSkills(bp: Blueprint): string {
  const skills = bp.skills.map((skill) => ({
    name: skill.name,
    description: skill.description,
    auth: skill.auth,
    actions: skill.actions.map((a) => ({
      name: a.name,
      description: a.description,
      method: a.method,
      path: a.route,
      entity: a.entity,
      action: a.action,
      workflow: a.workflow,
      // Empty ones say nothing: the runtime reads a missing one as empty.
      mapParams: nonEmpty(a.mapParams),
      body: nonEmpty(a.body),
      // Only a workflow action's: the body keys its workflow cannot run without.
      requiredBody: nonEmpty(requiredBodyKeys(bp, a)),
      query: nonEmpty(a.query),
      scopes: a.scopes,
      risk: actionRisk(a),
    })),
  }));
  return render('app/src/skills.ts.hbs', {
    skills: tsLiteral(skills, { lead: 'export const SKILLS: SkillSpec[] = '.length, trail: 1 }),
    workflowActions: bp.skills.some((s) => s.actions.some((a) => a.workflow !== undefined)),
  });
}
