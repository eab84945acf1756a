// Notification adapters of [notifications]: where a notify step's message goes (and an
// email step's: to the first adapter of type email, else to the default). The
// `console` type writes one line to the app's output; any other adapter sends through the sender
// src/extend.ts registers under its name (`notifications`). A step through an adapter with neither
// fails with WORKFLOW_STEP_NOT_SUPPORTED rather than dropping the message silently.

import { AppError } from '../core/errors.ts';
import type { Notification } from '../commands/workflow-contract.ts';

export interface NotificationConfig {
  default?: string;
  /** None when absent. */
  adapters?: ReadonlyArray<{ name: string; type: string; config?: Readonly<Record<string, unknown>> }>;
}

export type Sender = (message: Notification, config: Readonly<Record<string, unknown>>) => Promise<void>;

export function notifier(
  config: NotificationConfig,
  senders: Readonly<Record<string, Sender>> = {},
  log: (line: string) => void = (line) => console.log(line),
): { notify(message: Notification): Promise<void>; defaultAdapter?: string; emailAdapter?: string } {
  const list = config.adapters ?? [];
  const adapters = new Map(list.map((a) => [a.name, a]));
  return {
    defaultAdapter: config.default ?? (list.length === 1 ? list[0].name : undefined),
    emailAdapter: list.find((a) => a.type === 'email')?.name,
    async notify(message) {
      const adapter = adapters.get(message.adapter);
      if (adapter === undefined)
        throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `no notification adapter named "${message.adapter}"`);
      const send = Object.hasOwn(senders, adapter.name) ? senders[adapter.name] : undefined;
      if (send) return send(message, adapter.config ?? {});
      if (adapter.type !== 'console') {
        throw new AppError(
          'WORKFLOW_STEP_NOT_SUPPORTED',
          `notification adapter "${adapter.name}" (${adapter.type}) has no sender: register one in src/extend.ts`,
        );
      }
      const { adapter: name, ...rest } = message;
      log(`notify ${name}: ${JSON.stringify(rest)}`);
    },
  };
}
