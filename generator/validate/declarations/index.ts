// Declaration rules: everything that can be checked from one declaration as written, before the
// model is built (Wasp's AppSpec/Valid.hs style: small named rules, each reporting). Rules that
// need other declarations run on the model (validate/references.ts and after).

import type { CompileContext } from '../../context.ts';
import { namedSections, singleSection } from '../../model/raw.ts';
import { checkAuth } from './auth.ts';
import { checkCommand } from './commands.ts';
import { checkEntity } from './entities.ts';
import { notGenerated } from './not-generated.ts';
import { checkNotifications } from './notifications.ts';
import { checkPage } from './pages.ts';
import { checkPlugins } from './plugins.ts';
import { checkProject } from './project.ts';
import { checkService } from './services.ts';
import { checkSkill } from './skills.ts';
import { checkTemplates } from './templates.ts';
import { checkWorkflow } from './workflows.ts';

export function checkDeclarations(ctx: CompileContext): void {
  checkProject(ctx, singleSection(ctx.parsed, 'project'));
  const entities = namedSections(ctx.parsed, 'entity');
  const entityNames = entities.map((s) => s.name);
  for (const s of entities) checkEntity(ctx, s.name, s.value, entityNames);
  for (const s of namedSections(ctx.parsed, 'command')) checkCommand(ctx, s);
  for (const s of namedSections(ctx.parsed, 'service')) checkService(ctx, s.name, s.value);
  checkAuth(ctx, singleSection(ctx.parsed, 'auth'));
  for (const s of namedSections(ctx.parsed, 'skill')) checkSkill(ctx, s.name, s.value);
  for (const s of namedSections(ctx.parsed, 'workflow')) checkWorkflow(ctx, s.name, s.value);
  for (const s of namedSections(ctx.parsed, 'page')) checkPage(ctx, s.name, s.value);
  checkNotifications(ctx, singleSection(ctx.parsed, 'notifications'));
  checkTemplates(ctx);
  checkPlugins(ctx);
  notGenerated(ctx);
}
