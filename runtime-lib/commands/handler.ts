// The contract between generated apps and command handlers, kept free of runtime classes so a
// handler can import it (as `bp/runtime`) and stay type-compatible with every generated app's
// own copy. Handlers are typed end to end: `HandlerContext<Input, Ticket>`.

import type { Actor } from '../core/actor.ts';

/** What a handler gets: everything it needs, nothing that bypasses the rules. */
export interface HandlerContext<I = Record<string, unknown>, R = Record<string, unknown>> {
  actor: Actor;
  input: I;
  /** The record as loaded, with the relations the command's conditions read. */
  record: R;
  /**
   * Actor-scoped operations: access rules and field protection apply, bound to this command.
   * Writes take effect when the command commits.
   */
  db: ScopedDb;
  services: Readonly<Record<string, unknown>>;
  audit: { record(entry: { action: string; detail?: Record<string, unknown> }): void };
  events: { publish(name: string, payload: Record<string, unknown>): void };
  correlation: { traceId?: string; idempotencyKey?: string; agentRunId?: string };
}

/** May return field changes to merge into the command's own mutations. */
export type CommandHandler<I = Record<string, unknown>, R = Record<string, unknown>> = (
  ctx: HandlerContext<I, R>,
) => Promise<Record<string, unknown> | void> | Record<string, unknown> | void;

/** Ids are strings, or numbers for entities with an Integer primary key. */
export interface ScopedDb {
  get(entity: string, id: string | number): Promise<Record<string, unknown>>;
  list(entity: string, page?: { limit?: number; offset?: number }): Promise<Record<string, unknown>[]>;
  /** Stages a change; returns the record as it will be after the commit. */
  update(entity: string, id: string | number, changes: Record<string, unknown>): Promise<Record<string, unknown>>;
  create(entity: string, data: Record<string, unknown>): Promise<void>;
  delete(entity: string, id: string | number): Promise<void>;
}

/** Helps handler authors: `export const closeTicket = defineHandler<Input, Ticket>(async (ctx) => ...)`. */
export function defineHandler<I = Record<string, unknown>, R = Record<string, unknown>>(
  handler: CommandHandler<I, R>,
): CommandHandler<I, R> {
  return handler;
}

export type { Actor };
