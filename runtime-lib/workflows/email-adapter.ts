// The built-in `email` notification adapter: SMTP through nodemailer, with the adapter's config
// (`host`, `port`, `secure`, `requireTLS`, `user`, `from`, each also as `<key>Env`, the name of an
// environment variable; the password only as `passwordEnv`). Without an SMTP host it appends each
// message to an outbox file (Zebric's `outboxFile`; by default ./data/outbox/<adapter>.jsonl, one
// JSON object a line) and says so at start, as Zebric's adapter writes to its outbox.
//
// Header injection: nodemailer encodes the subject and checks addresses, and a `to` holding a line
// break is refused here before anything is sent.

import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import nodemailer from 'nodemailer';
import { AppError } from '../core/errors.ts';
import type { Notification } from '../commands/workflow-contract.ts';
import { type AdapterKind, type AdapterSpec, secret, setting } from './notify.ts';

/** Seconds, not nodemailer's minutes: a job waits on this send while it holds its lease. */
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

export const emailAdapter: AdapterKind = (adapter, { env, warn }) => {
  const from = setting(adapter, 'from', env);
  if (from === undefined) warn(`notification adapter "${adapter.name}" (email) has no from: its messages fail`);
  const host = setting(adapter, 'host', env);
  if (host === undefined) {
    const file = path.resolve(
      setting(adapter, 'outboxFile', env) ?? path.join('data', 'outbox', `${adapter.name}.jsonl`),
    );
    warn(`notification adapter "${adapter.name}" (email) has no SMTP host: its messages are appended to ${file}`);
    return async (message) => {
      const mail = mailOf(adapter, message, from);
      await fs.mkdir(path.dirname(file), { recursive: true });
      const line = {
        at: new Date().toISOString(),
        adapter: adapter.name,
        ...mail,
        workflow: message.workflow,
        jobId: message.jobId,
      };
      await fs.appendFile(file, `${JSON.stringify(line)}\n`, 'utf8');
    };
  }
  const user = setting(adapter, 'user', env);
  const pass = secret(adapter, 'password', env);
  if (user !== undefined && pass === undefined) {
    const named = adapter.config?.passwordEnv;
    warn(
      `notification adapter "${adapter.name}" (email) has a user but no password ` +
        `(${typeof named === 'string' ? `${named} is not set` : 'no passwordEnv'}): it sends without signing in`,
    );
  }
  const transport = nodemailer.createTransport({
    host,
    port: portOf(adapter, env),
    secure: flag(adapter, 'secure', env),
    requireTLS: flag(adapter, 'requireTLS', env),
    auth: user !== undefined && pass !== undefined ? { user, pass } : undefined,
    ...TIMEOUTS,
  });
  return async (message) => {
    try {
      await transport.sendMail(mailOf(adapter, message, from));
    } catch (err) {
      throw smtpFailure(adapter, err);
    }
  };
};

interface Mail {
  from: string;
  to: string;
  subject: string;
  text: string;
}

function mailOf(adapter: AdapterSpec, message: Notification, from: string | undefined): Mail {
  if (from === undefined) {
    throw new AppError('NOTIFICATION_NOT_CONFIGURED', `e-mail adapter "${adapter.name}" has no from address`);
  }
  const to = message.to?.trim();
  if (!to) throw new AppError('WORKFLOW_STEP_INVALID', `an e-mail through adapter "${adapter.name}" needs to`);
  if (/[\r\n]/.test(to)) throw new AppError('WORKFLOW_STEP_INVALID', 'an e-mail address may not hold a line break');
  // Zebric's defaults: a message without subject is a "Notification".
  return { from, to, subject: message.subject || 'Notification', text: message.body };
}

function portOf(adapter: AdapterSpec, env: NodeJS.ProcessEnv): number | undefined {
  const text = setting(adapter, 'port', env);
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`notification adapter "${adapter.name}": port ${JSON.stringify(text)} is not a port number`);
  }
  return port;
}

function flag(adapter: AdapterSpec, key: string, env: NodeJS.ProcessEnv): boolean | undefined {
  const text = setting(adapter, key, env);
  if (text === undefined) return undefined;
  if (text !== 'true' && text !== 'false') {
    throw new Error(`notification adapter "${adapter.name}": ${key} ${JSON.stringify(text)} is not true or false`);
  }
  return text === 'true';
}

/** SMTP's own split: a 4xx answer or no answer may pass later; a 5xx or a refused sign-in will not. */
function smtpFailure(adapter: AdapterSpec, err: unknown): AppError {
  const e = err as { code?: string; responseCode?: number; message?: string };
  const message = `e-mail adapter "${adapter.name}": ${e.message ?? String(err)}`;
  const refused =
    (e.responseCode !== undefined && e.responseCode >= 500) || e.code === 'EAUTH' || e.code === 'EENVELOPE';
  return new AppError(refused ? 'NOTIFICATION_REJECTED' : 'NOTIFICATION_FAILED', message, { cause: err });
}
