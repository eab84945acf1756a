// Cross-reference rules of [auth]: permission entities and actions, API key names.

import type { CompileContext } from '../../context.ts';
import type { Blueprint } from '../../model/types.ts';
import { didYouMean } from '../../suggest.ts';
import { entityNamed, unknownEntity } from './common.ts';

export function permissionPatterns(ctx: CompileContext, bp: Blueprint): void {
  const actions = ['read', 'create', 'update', 'delete', '*'];
  for (const [role, rules] of Object.entries(bp.auth.permissions ?? {})) {
    for (const kind of ['allow', 'deny'] as const) {
      rules[kind].forEach((rule) => {
        const at = ctx.declaredAt.get(rule) ?? ['auth', 'permissions', role, kind];
        if (rule.entity !== '*' && !entityNamed(bp, rule.entity)) unknownEntity(ctx, bp, at, rule.entity);
        for (const a of rule.actions) {
          if (!actions.includes(a))
            ctx.report('INVALID_PERMISSION', at, `"${a}" is not an entity action (read, create, update, delete or *)`, {
              hint: didYouMean(a, actions),
            });
        }
      });
    }
  }
}

export function apiKeyNames(ctx: CompileContext, bp: Blueprint): void {
  const keyNames = new Set<string>();
  const credentials = new Set<string>();
  for (const key of bp.auth.apiKeys) {
    const at = ctx.declaredAt.get(key) ?? ['auth', 'apiKeys'];
    if (keyNames.has(key.name))
      ctx.report('DUPLICATE_DEFINITION', [...at, 'name'], `two API keys are named "${key.name}"`);
    if (credentials.has(key.credentialId))
      ctx.report(
        'DUPLICATE_DEFINITION',
        [...at, 'credentialId'],
        `credential id "${key.credentialId}" is used by two API keys`,
      );
    keyNames.add(key.name);
    credentials.add(key.credentialId);
  }
}

/**
 * When people are `User` records, a person's id is the actor's id, a string everywhere (sessions,
 * conditions, audit): an Integer key could never equal it, so every ownership rule and every
 * `$currentUser.id` would fail.
 */
export function peopleKey(ctx: CompileContext, bp: Blueprint): void {
  const people = bp.auth.userRecords && entityNamed(bp, bp.auth.userRecords.entity);
  if (!people || people.primaryKey?.type !== 'Integer') return;
  ctx.report(
    'INVALID_PRIMARY_KEY',
    [...people.primaryKey.path, 'type'],
    `people sign in as ${people.name} records, so its key cannot be Integer`,
    {
      hint: "give it a ULID, UUID or Text key: a person's id is text in sessions, conditions and audit records",
    },
  );
}
