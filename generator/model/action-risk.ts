// The risk of a skill action, read by the validator (who may start an action) and by the emitters
// (skills.ts, the MCP tools' annotations, openapi.json's x-risk), so it is defined once here.

import type { SkillAction } from './types.ts';

/** Zebric's default risk of an action that declares none: GET reads, DELETE destroys, the rest write. */
export function actionRisk(action: SkillAction): NonNullable<SkillAction['risk']> {
  if (action.risk) return action.risk;
  return action.method === 'GET' ? 'read' : action.method === 'DELETE' ? 'destructive' : 'write';
}
