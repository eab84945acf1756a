// The built-in `slack` notification adapter: `chat.postMessage` through the Slack Web API client,
// with Zebric's config: the bot token from the environment variable `botTokenEnv` names (else
// SLACK_BOT_TOKEN), `defaultChannel` (or `defaultChannelEnv`, else SLACK_DEFAULT_CHANNEL), and
// `apiUrl` (or `apiUrlEnv`) for another endpoint than https://slack.com/api/. A step's `channel`
// (else `to`) picks the channel; its `metadata.thread_ts` (or `threadTs`) replies in a thread.
//
// A 429 is retried after its Retry-After, at most MAX_ATTEMPTS sends and MAX_WAIT_S a wait; past
// that the step fails, retryable. Without a token the app still starts (like an API key whose
// variable is unset): it warns once, and each send fails with NOTIFICATION_NOT_CONFIGURED.

import {
  type ChatPostMessageArguments,
  ErrorCode,
  LogLevel,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebClient,
} from '@slack/web-api';
import { AppError } from '../core/errors.ts';
import type { Notification } from '../commands/workflow-contract.ts';
import { type AdapterKind, type AdapterSpec, setting } from './notify.ts';
import { pause } from './webhook.ts';

const MAX_ATTEMPTS = 3;
/** The longest Retry-After waited for: a job holds its lease while it waits. */
const MAX_WAIT_S = 30;
const TIMEOUT_MS = 10_000;

export const slackAdapter: AdapterKind = (adapter, { env, warn }) => {
  const tokenEnv = typeof adapter.config?.botTokenEnv === 'string' ? adapter.config.botTokenEnv : 'SLACK_BOT_TOKEN';
  const token = env[tokenEnv] || undefined;
  if (token === undefined) {
    warn(`notification adapter "${adapter.name}" (slack) has no bot token (${tokenEnv} is not set): its messages fail`);
    return async () => {
      throw new AppError(
        'NOTIFICATION_NOT_CONFIGURED',
        `Slack adapter "${adapter.name}" has no bot token: set ${tokenEnv}`,
      );
    };
  }
  const client = new WebClient(token, {
    slackApiUrl: setting(adapter, 'apiUrl', env),
    // 429s are retried here, within bounds; network errors and 5xx once more by the client.
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 1, minTimeout: 250, maxTimeout: 1000 },
    timeout: TIMEOUT_MS,
    logLevel: LogLevel.ERROR,
  });
  const defaultChannel = setting(adapter, 'defaultChannel', env) ?? (env.SLACK_DEFAULT_CHANNEL || undefined);
  return async (message, signal) => {
    const post = postOf(adapter, message, defaultChannel);
    for (let attempt = 1; ; attempt++) {
      try {
        await client.chat.postMessage(post);
        return;
      } catch (err) {
        const wait = err instanceof WebAPIRateLimitedError ? err.retryAfter : undefined;
        if (wait === undefined || attempt >= MAX_ATTEMPTS || wait > MAX_WAIT_S) throw slackFailure(adapter, err);
        await pause(wait * 1000, signal);
      }
    }
  };
};

function postOf(adapter: AdapterSpec, message: Notification, defaultChannel?: string): ChatPostMessageArguments {
  const channel = message.channel || message.to || defaultChannel;
  if (!channel) {
    throw new AppError(
      'WORKFLOW_STEP_INVALID',
      `a message through Slack adapter "${adapter.name}" needs channel (or the adapter's defaultChannel)`,
    );
  }
  const meta = message.metadata ?? {};
  const post: Record<string, unknown> = { channel, text: message.body || message.subject || 'Notification' };
  const thread = meta.thread_ts ?? meta.threadTs;
  if (thread !== undefined && thread !== null && thread !== '') {
    if (typeof thread !== 'string' || !/^\d+\.\d+$/.test(thread.trim())) {
      throw new AppError('WORKFLOW_STEP_INVALID', `thread_ts ${JSON.stringify(thread)} is not a Slack timestamp`);
    }
    post.thread_ts = thread.trim();
  }
  // Zebric's other message options, when of the right type.
  if (Array.isArray(meta.blocks)) post.blocks = meta.blocks;
  for (const [key, alias] of [
    ['mrkdwn', 'mrkdwn'],
    ['unfurl_links', 'unfurlLinks'],
    ['unfurl_media', 'unfurlMedia'],
  ]) {
    const value = meta[key] ?? meta[alias];
    if (typeof value === 'boolean') post[key] = value;
  }
  return post as unknown as ChatPostMessageArguments;
}

function slackFailure(adapter: AdapterSpec, err: unknown): AppError {
  const where = `Slack adapter "${adapter.name}"`;
  if (err instanceof WebAPIRateLimitedError) {
    return new AppError('NOTIFICATION_FAILED', `${where}: rate limited (retry after ${err.retryAfter} s)`, {
      cause: err,
    });
  }
  // Slack's own refusal (`ok: false`): channel_not_found, invalid_auth, not_in_channel...
  if (err instanceof WebAPIPlatformError) {
    return new AppError('NOTIFICATION_REJECTED', `${where}: Slack answered ${err.data.error}`, { cause: err });
  }
  const code = (err as { code?: string }).code;
  const text = err instanceof Error ? err.message : String(err);
  const http = code === ErrorCode.HTTPError ? (err as { statusCode: number }).statusCode : undefined;
  const refused = http !== undefined && http < 500;
  return new AppError(refused ? 'NOTIFICATION_REJECTED' : 'NOTIFICATION_FAILED', `${where}: ${text}`, {
    cause: err,
  });
}
