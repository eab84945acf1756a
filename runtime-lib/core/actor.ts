// One actor shape for every caller (spec 2.4). Resolved before any route handler runs; nothing
// from the request body, query or headers other than a verified credential may set it.

export type ActorKind = 'user' | 'agent' | 'service' | 'system' | 'anonymous';

export interface Actor {
  kind: ActorKind;
  id: string;
  credentialId?: string;
  roles: readonly string[];
  /** The first role, for conditions written as { "$currentUser.role" = "admin" }. */
  role?: string;
  email?: string;
  /** API-key actors: the scopes narrowing what the credential may call. */
  scopes?: readonly string[];
  displayName?: string;
  /** Human on whose behalf an agent acts; set only by trusted server-side code (withDelegation). */
  delegatedBy?: string;
}

export const ANONYMOUS: Actor = Object.freeze({
  kind: 'anonymous',
  id: 'anonymous',
  roles: Object.freeze([]) as readonly string[],
});

export function isAuthenticated(actor: Actor | undefined): actor is Actor {
  return actor !== undefined && actor.kind !== 'anonymous';
}

/**
 * The documented hook for trusted server code (a host that has verified a human's approval) to
 * mark an actor as acting on that human's behalf. Returns a new frozen actor; requests can never
 * reach this through headers, bodies or query parameters.
 */
export function withDelegation(actor: Actor, delegatedBy: string): Actor {
  return Object.freeze({ ...actor, delegatedBy });
}
