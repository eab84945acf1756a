// Rules on the [notifications] adapters as written. Secrets are environment variable names, never
// values in the blueprint (which ends up in the repository and in the generated src/workflows.ts):
// a config value that looks like one is LITERAL_SECRET. The built-in `email` and `slack` types
// read the keys below (runtime/workflows/email-adapter.ts, slack-adapter.ts); another key of
// theirs is UNKNOWN_KEY, and their settings must have the type the adapter reads.

import type { CompileContext } from '../../context.ts';
import { list, type Raw } from '../../model/raw.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';

/** Per built-in type: its settings (each also `<key>Env`) and its secrets (only `<key>Env`), with their types. */
const BUILT_IN: Record<string, { settings: Record<string, 'string' | 'port' | 'boolean'>; secrets: string[] }> = {
  email: {
    settings: {
      from: 'string',
      host: 'string',
      port: 'port',
      secure: 'boolean',
      requireTLS: 'boolean',
      user: 'string',
      outboxFile: 'string',
    },
    secrets: ['password'],
  },
  slack: { settings: { defaultChannel: 'string', apiUrl: 'string' }, secrets: ['botToken', 'signingSecret'] },
};

/** What an environment variable's name may be; and what one looks like by convention (SMTP_PASSWORD). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ENV_LIKE = /^[A-Z_][A-Z0-9_]*$/;
/** Keys that hold a credential by their name. */
const SECRET_KEY = /(token|password|passwd|secret|api_?key|private_?key|credential)$/i;
/** Values that are credentials by their shape: Slack, GitHub, AWS, OpenAI-style and Stripe keys. */
const TOKEN_VALUE = /^(xox[abposr]-|xapp-|gh[pousr]_|github_pat_|AKIA[0-9A-Z]{16}|sk-|sk_live_|rk_live_)/;

export function checkNotifications(ctx: CompileContext, raw: Raw): void {
  list(raw.adapters).forEach((a, i) => {
    if (!isTable(a) || !isTable(a.config)) return;
    const at: KeyPath = ['notifications', 'adapters', i, 'config'];
    const type = typeof a.type === 'string' ? a.type : '';
    const builtIn = Object.hasOwn(BUILT_IN, type) ? BUILT_IN[type] : undefined;
    for (const [key, value] of Object.entries(a.config)) {
      if (literalSecret(ctx, [...at, key], key, value, builtIn?.secrets ?? [])) continue;
      if (builtIn) builtInKey(ctx, [...at, key], type, key, value);
    }
  });
}

/** Reports a value that looks like a credential; true when it did. */
function literalSecret(ctx: CompileContext, at: KeyPath, key: string, value: unknown, secrets: string[]): boolean {
  if (typeof value !== 'string' || value === '') return false;
  const report = (why: string, hint: string) => {
    ctx.report('LITERAL_SECRET', at, `${key} ${why}: secrets belong in environment variables`, {
      severity: 'warning',
      hint,
    });
    return true;
  };
  const envKey = key.endsWith('Env') ? key : `${key}Env`;
  if (TOKEN_VALUE.test(value)) {
    return report(
      'looks like a token written into the blueprint',
      `revoke it, set it in an environment variable and name that here: ${envKey} = "SLACK_BOT_TOKEN"`,
    );
  }
  if (key.endsWith('Env')) {
    return ENV_NAME.test(value)
      ? false
      : report('must name an environment variable, and this looks like the secret itself', `${key} = "MY_SECRET"`);
  }
  // The built-in adapters read their secrets only through `<key>Env`: this value is not used.
  if (secrets.includes(key)) {
    return report('is not read: the adapter takes it only from an environment variable', `${envKey} = "..."`);
  }
  if (SECRET_KEY.test(key) && !ENV_LIKE.test(value)) {
    return report('holds what looks like a secret', `write ${envKey} = "<VARIABLE>" and set that variable`);
  }
  return false;
}

function builtInKey(ctx: CompileContext, at: KeyPath, type: string, key: string, value: unknown): void {
  const { settings, secrets } = BUILT_IN[type];
  const known = [...Object.keys(settings).flatMap((k) => [k, `${k}Env`]), ...secrets.map((k) => `${k}Env`)];
  if (!known.includes(key)) {
    ctx.report('UNKNOWN_KEY', at, `unknown key "${key}" of a ${type} adapter's config is ignored`, {
      severity: 'warning',
      hint: didYouMean(key, known) ?? `${type} adapters read ${known.join(', ')}`,
    });
    return;
  }
  const kind = key.endsWith('Env') ? 'env' : settings[key];
  const fits =
    kind === 'port'
      ? Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 65535
      : kind === 'boolean'
        ? typeof value === 'boolean'
        : kind === 'env'
          ? typeof value === 'string' && ENV_NAME.test(value)
          : typeof value === 'string' && value !== '';
  if (!fits) {
    const wanted = {
      port: 'a port number (1 to 65535)',
      boolean: 'true or false',
      env: 'the name of an environment variable',
      string: 'text',
    }[kind];
    ctx.report('INVALID_VALUE', at, `${key} must be ${wanted}, not ${JSON.stringify(value)}`);
  }
}
