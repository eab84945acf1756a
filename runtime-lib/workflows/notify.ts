// Notification adapters of [notifications]: where a notify step's message goes (and an
// email step's: to the first adapter of type email, else to the default). A sender src/extend.ts
// registers under an adapter's name wins; else the type decides: `console` writes one line to the
// app's output, and `email` and `slack` are built in (email-adapter.ts, slack-adapter.ts), handed
// over in the config by the generated src/workflows.ts only where the blueprint uses them, so an
// app depends on nodemailer or the Slack client only then. A step through an adapter with none of
// these fails with WORKFLOW_STEP_NOT_SUPPORTED rather than dropping the message silently.

import { AppError } from '../core/errors.ts';
import type { Notification } from '../commands/workflow-contract.ts';

export interface AdapterSpec {
  name: string;
  type: string;
  config?: Readonly<Record<string, unknown>>;
}

/** What a built-in adapter gets at start: the environment its secrets come from, and where it warns. */
export interface AdapterSetup {
  env: NodeJS.ProcessEnv;
  warn: (message: string) => void;
}

/** Sends one message; the signal ends a wait between attempts (the app is stopping). */
export type Deliver = (message: Notification, signal?: AbortSignal) => Promise<void>;

/** A built-in adapter type: the sender of one adapter, made once at start (it may warn, or throw on bad settings). */
export type AdapterKind = (adapter: AdapterSpec, setup: AdapterSetup) => Deliver;

export interface NotificationConfig {
  default?: string;
  /** None when absent. */
  adapters?: readonly AdapterSpec[];
  /** The built-in types other than console that the adapters use, by type. */
  kinds?: Readonly<Record<string, AdapterKind>>;
}

export type Sender = (message: Notification, config: Readonly<Record<string, unknown>>) => Promise<void>;

export interface NotifierOptions {
  env?: NodeJS.ProcessEnv;
  warn?: (message: string) => void;
  /** Where console adapters write. */
  log?: (line: string) => void;
}

export function notifier(
  config: NotificationConfig,
  senders: Readonly<Record<string, Sender>> = {},
  options: NotifierOptions = {},
): {
  notify(message: Notification, signal?: AbortSignal): Promise<void>;
  defaultAdapter?: string;
  emailAdapter?: string;
} {
  const list = config.adapters ?? [];
  const setup: AdapterSetup = {
    env: options.env ?? process.env,
    warn: options.warn ?? ((message) => console.warn(`warning: ${message}`)),
  };
  const log = options.log ?? ((line: string) => console.log(line));
  // Made here, at start, so that a bad setting stops the app and a missing one is said once.
  const deliveries = new Map<string, Deliver>();
  for (const adapter of list) {
    const send = Object.hasOwn(senders, adapter.name) ? senders[adapter.name] : undefined;
    const kind = config.kinds && Object.hasOwn(config.kinds, adapter.type) ? config.kinds[adapter.type] : undefined;
    if (send) deliveries.set(adapter.name, (message) => send(message, adapter.config ?? {}));
    else if (adapter.type === 'console') deliveries.set(adapter.name, async (message) => log(consoleLine(message)));
    else if (kind) deliveries.set(adapter.name, kind(adapter, setup));
  }
  const adapters = new Map(list.map((a) => [a.name, a]));
  return {
    defaultAdapter: config.default ?? (list.length === 1 ? list[0].name : undefined),
    emailAdapter: list.find((a) => a.type === 'email')?.name,
    async notify(message, signal) {
      const adapter = adapters.get(message.adapter);
      if (adapter === undefined)
        throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `no notification adapter named "${message.adapter}"`);
      const deliver = deliveries.get(adapter.name);
      if (deliver === undefined) {
        throw new AppError(
          'WORKFLOW_STEP_NOT_SUPPORTED',
          `notification adapter "${adapter.name}" (${adapter.type}) has no sender: register one in src/extend.ts`,
        );
      }
      return deliver(message, signal);
    },
  };
}

function consoleLine(message: Notification): string {
  const { adapter: name, ...rest } = message;
  return `notify ${name}: ${JSON.stringify(rest)}`;
}

/**
 * A setting of an adapter's config: its value, or that of the environment variable its `<key>Env`
 * names (Zebric's `botTokenEnv`, `defaultChannelEnv`). Undefined when neither is set or empty.
 */
export function setting(adapter: AdapterSpec, key: string, env: NodeJS.ProcessEnv): string | undefined {
  const value = adapter.config?.[key];
  if (value !== undefined && value !== null && value !== '') return String(value);
  return secret(adapter, key, env);
}

/** A secret of an adapter's config: only from the environment variable its `<key>Env` names, never a value. */
export function secret(adapter: AdapterSpec, key: string, env: NodeJS.ProcessEnv): string | undefined {
  const name = adapter.config?.[`${key}Env`];
  const value = typeof name === 'string' && Object.hasOwn(env, name) ? env[name] : undefined;
  return value === undefined || value === '' ? undefined : value;
}
