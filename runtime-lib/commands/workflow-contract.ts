// What the team's code (src/extend.ts) gives workflow steps and what it gets from them: the
// message a notification sender receives and the shape of a plugin step's action. Here rather
// than in workflows/, so that the contract of src/extend.ts (http/extension.ts) types without the
// workflow engine, which an app without workflows does not carry.

import type { Actor } from '../core/actor.ts';

/** A message of a notify or email step, as an adapter receives it. */
export interface Notification {
  adapter: string;
  channel?: string;
  to?: string;
  subject?: string;
  body: string;
  /** The step's `template`, for senders that render their own (bp renders none). */
  template?: string;
  /** The step's `metadata`, templates resolved (Zebric's; the Slack adapter reads `thread_ts`, `blocks`...). */
  metadata?: Readonly<Record<string, unknown>>;
  workflow: string;
  jobId: string;
}

/** What a plugin action gets besides its params: the job it runs for and a copy of the run's context. */
export interface PluginContext {
  workflow: string;
  jobId: string;
  actor: Actor;
  context: Record<string, unknown>;
}

export type PluginAction = (params: unknown, ctx: PluginContext) => Promise<unknown>;
