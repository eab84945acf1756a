// The actor as blueprints may read it: `actor.<key>` in expressions and mutations,
// `$currentUser.<key>` in condition tables. One list, kept in step with runtime-lib/core/actor.ts;
// add a key here when the actor gains one.

export const ACTOR_KEYS: readonly string[] = ['id', 'credentialId', 'roles', 'role', 'delegatedBy', 'kind', 'email', 'scopes', 'displayName'];
