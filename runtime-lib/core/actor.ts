// One actor shape for every caller. Resolved before any route handler runs; nothing
// from the request body, query or headers other than a verified credential may set it.
//
// Besides bp's own keys it carries the keys Zebric 0.6 blueprints read (`actor.type`,
// `actor.effectiveId`, `actor.metadata.*`), set once when the actor is made (makeActor), so that
// rules read them as plain properties, with no work per check.

import { AppError } from './errors.ts';

export type ActorKind = 'user' | 'agent' | 'service' | 'system' | 'anonymous';

/** The kinds of an actor that is someone: Zebric's `actor.type`. */
export type ActorType = Exclude<ActorKind, 'anonymous'>;

export interface Actor {
  kind: ActorKind;
  /** The kind under Zebric's name; absent for the anonymous caller, who is no actor to rules. */
  type?: ActorType;
  id: string;
  /** Whom the work is for: delegatedBy when set, else id (Zebric's `actor.effectiveId`). */
  effectiveId?: string;
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
  /**
   * What rules read as `actor.metadata.<k>`, and `$currentUser.<k>` for a key the actor lacks: a
   * person's e-mail, name, role and (when people are `User` records) every field of the record; an
   * API key's display name and role. Server-side only: never sent to clients (actorView).
   */
  metadata?: Readonly<Record<string, unknown>>;
}

export const ANONYMOUS: Actor = Object.freeze({
  kind: 'anonymous',
  id: 'anonymous',
  roles: Object.freeze([]) as readonly string[],
});

export type ActorFields = Omit<Actor, 'kind' | 'type' | 'effectiveId'> & { kind: ActorType };

/** A frozen actor with its derived keys: `type` (the kind) and `effectiveId` (delegatedBy ?? id). */
export function makeActor(fields: ActorFields): Actor {
  return Object.freeze({ ...fields, type: fields.kind, effectiveId: fields.delegatedBy ?? fields.id });
}

/**
 * Trusted work of the app itself (the users command): it passes every access rule, as Zebric's
 * system session does. No request can be this actor: only code that imports it.
 */
export const SYSTEM: Actor = makeActor({ kind: 'system', id: 'system', credentialId: 'system', roles: [] });

/**
 * The app acting for a trigger no person or key made: a webhook delivery that proved it knows the
 * secret (`webhook:<Workflow>`), or a schedule's tick (`schedule:<Workflow>`). A system actor, as
 * Zebric runs such workflows: the blueprint's author wrote the steps; audit records name the trigger.
 */
export function triggerActor(id: string): Actor {
  return makeActor({ kind: 'system', id, credentialId: id, roles: [] });
}

/**
 * Refuses (403 INSUFFICIENT_SCOPE) an API key that lacks any of `needed`: scopes narrow what a key
 * may call; people are not scoped. `what` names who needs them in the message.
 */
export function requireScopes(actor: Actor, needed: readonly string[], what: string): void {
  if (actor.kind !== 'agent') return;
  const missing = needed.filter((s) => !actor.scopes?.includes(s));
  if (missing.length) throw new AppError('INSUFFICIENT_SCOPE', `${what} needs the scope(s) ${missing.join(', ')}`);
}

export function isAuthenticated(actor: Actor | undefined): actor is Actor {
  return actor !== undefined && actor.kind !== 'anonymous';
}

/** `delegatedBy ?? id`, also for an actor made without makeActor. */
export function effectiveIdOf(actor: Actor): string {
  return actor.effectiveId ?? actor.delegatedBy ?? actor.id;
}

/**
 * The actor as the app tells a client who it is (`/api/auth/session`, sign-in): every key but
 * `metadata`, which holds server-side values (a person's whole record, fields its read rules hide
 * from that person included).
 */
export function actorView(actor: Actor): Omit<Actor, 'metadata'> {
  const { metadata: _hidden, ...view } = actor;
  return view;
}

/**
 * The documented hook for trusted server code (a host that has verified a human's approval) to
 * mark an actor as acting on that human's behalf. Returns a new frozen actor; requests can never
 * reach this through headers, bodies or query parameters.
 */
export function withDelegation(actor: Actor, delegatedBy: string): Actor {
  if (actor.kind === 'anonymous') return Object.freeze({ ...actor, delegatedBy });
  return makeActor({ ...(actor as ActorFields), delegatedBy });
}
