// Warnings about what the rules let a known actor do, which the author may not have meant:
// OPEN_SIGNUP (anyone can sign up and then write) and UNSCOPED_WRITE (an API key's scopes do not
// limit writes to entities that declare no write scopes). Both read the rules three-valued: a
// rule that depends on the record counts as letting the actor.

import type { CompileContext } from '../../context.ts';
import { singleSection } from '../../model/raw.ts';
import type { Blueprint, EntityAction } from '../../model/types.ts';
import { apiKeyActor, mayAct, SIGNED_UP } from './may-act.ts';
import type { ActorFacts } from './three-valued.ts';

const WRITES: EntityAction[] = ['create', 'update', 'delete'];

export function checkSecurity(ctx: CompileContext, bp: Blueprint): void {
  openSignup(ctx, bp);
  unscopedWrites(ctx, bp);
}

/** Writes `actor` may make, per entity: `Comment (create, update, delete)`. */
function writesOf(ctx: CompileContext, bp: Blueprint, actor: ActorFacts, entities = bp.entities): string[] {
  return entities.flatMap((entity) => {
    const actions = WRITES.filter((action) => {
      const may = mayAct(ctx, bp, entity, action, actor);
      return may !== undefined && may !== 'no';
    });
    return actions.length ? [`${entity.name} (${actions.join(', ')})`] : [];
  });
}

function openSignup(ctx: CompileContext, bp: Blueprint): void {
  if (!bp.auth.providers.includes('email') || !bp.auth.signup) return;
  const writes = writesOf(ctx, bp, SIGNED_UP);
  if (!writes.length) return;
  const written = singleSection(ctx.parsed, 'auth').signup !== undefined;
  const message = `anyone may sign up, and a new account (no roles) may write ${writes.join(', ')}`;
  ctx.report('OPEN_SIGNUP', written ? ['auth', 'signup'] : ['auth'], message, {
    severity: 'warning',
    hint: 'set auth.signup = false and add people with the users command, or require a role in these rules',
  });
}

function unscopedWrites(ctx: CompileContext, bp: Blueprint): void {
  const unscoped = bp.entities.filter((e) => e.scopes.write.length === 0);
  for (const key of bp.auth.apiKeys) {
    const at = ctx.declaredAt.get(key) ?? ['auth', 'apiKeys'];
    if (key.scopes.length === 0 || ctx.failed(at)) continue;
    const writes = writesOf(ctx, bp, apiKeyActor(key), unscoped);
    if (!writes.length) continue;
    // A write scope the key holds, else one it lacks (so the key could not write at all).
    const scope = key.scopes.find((s) => s.endsWith('write')) ?? key.scopes[0].replace(/read$/, 'write');
    const message = `API key "${key.name}" has scopes, but may write ${writes.join(', ')}, which declare no scopes.write: its scopes do not limit these writes`;
    ctx.report('UNSCOPED_WRITE', at, message, {
      severity: 'warning',
      hint: `require a scope for writing, e.g. scopes = { write = ["${scope}"] } on these entities`,
    });
  }
}
