// One actor shape for every caller (spec 2.4). Resolved before any route handler runs; nothing
// from the request body, query or headers other than a verified credential may set it.

export type ActorKind = 'user' | 'agent' | 'service' | 'system' | 'anonymous';

export interface Actor {
  kind: ActorKind;
  id: string;
  credentialId?: string;
  roles: readonly string[];
  email?: string;
  /** Human on whose behalf an agent acts; set only by trusted server-side code. */
  delegatedBy?: string;
}

export const ANONYMOUS: Actor = Object.freeze({ kind: 'anonymous', id: 'anonymous', roles: Object.freeze([]) as readonly string[] });
