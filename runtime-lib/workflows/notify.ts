// Notification adapters of [notifications] (spec 2.7): where a notify step's message goes. The
// `console` type writes one line to the app's output; other types have no runtime yet, and a step
// that uses one fails with WORKFLOW_STEP_NOT_SUPPORTED rather than dropping the message silently.

import { AppError } from '../core/errors.ts';
import type { Notification } from './engine.ts';

export interface NotificationConfig {
  default?: string;
  adapters: ReadonlyArray<{ name: string; type: string }>;
}

export function notifier(
  config: NotificationConfig,
  log: (line: string) => void = (line) => console.log(line),
): { notify(message: Notification): Promise<void>; defaultAdapter?: string } {
  const types = new Map(config.adapters.map((a) => [a.name, a.type]));
  return {
    defaultAdapter: config.default ?? (config.adapters.length === 1 ? config.adapters[0].name : undefined),
    async notify(message) {
      const type = types.get(message.adapter);
      if (type === undefined)
        throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `no notification adapter named "${message.adapter}"`);
      if (type !== 'console')
        throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `notification adapters of type "${type}" do not send yet`);
      const { adapter, ...rest } = message;
      log(`notify ${adapter}: ${JSON.stringify(rest)}`);
    },
  };
}
