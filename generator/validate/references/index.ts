// Rules across declarations: every name a blueprint uses must resolve to something declared,
// of the right kind, in the right place. Each rule is a small function returning nothing but
// reports; they all run, so a user sees every problem at once.

import type { CompileContext } from '../../context.ts';
import type { Blueprint } from '../../model/types.ts';
import { conditionNameRules } from '../names/check-names.ts';
import { apiKeyNames, peopleKey, permissionPatterns } from './auth.ts';
import { commandEntities, commandHandlers, commandMutations, operationIds } from './commands.ts';
import type { ReferenceRule } from './common.ts';
import { entityCollections, indexes, protection, refTargets, relations } from './entities.ts';
import { skillActions } from './skills.ts';
import { transactionalSteps } from './transactional-steps.ts';
import { pageReferences, workflowReferences } from './workflows-pages.ts';

const RULES: ReferenceRule[] = [
  entityCollections,
  refTargets,
  relations,
  indexes,
  protection,
  commandEntities,
  commandMutations,
  commandHandlers,
  operationIds,
  skillActions,
  workflowReferences,
  transactionalSteps,
  pageReferences,
  permissionPatterns,
  apiKeyNames,
  peopleKey,
  conditionNameRules,
];

export function checkReferences(ctx: CompileContext, bp: Blueprint): void {
  for (const rule of RULES) rule(ctx, bp);
}
