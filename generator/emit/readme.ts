// README.md of the generated app: how to run, configure, extend, build and deploy it, which handler
// each command runs, and what of the blueprint it does not serve yet. Text that comes from the
// blueprint is wrapped here, so that every line stays within 120 characters.

import * as path from 'node:path';
import { publicActions } from '../model/access-defaults.ts';
import { expressPath, pageServed, pageTitle } from '../model/pages.ts';
import { startedByHand } from '../model/workflows.ts';
import type { Blueprint } from '../model/types.ts';
import { render } from './templates.ts';

const WIDTH = 120;

/**
 * Wraps `text` at spaces into lines of at most WIDTH characters, the first starting with `first`
 * and the others with `rest` (a list item's hanging indent). A single word longer than a line stays
 * whole.
 */
export function wrap(text: string, first = '', rest = first): string {
  const lines: string[] = [];
  let line = first;
  let empty = true;
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (!empty && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = rest + word;
    } else {
      line += (empty ? '' : ' ') + word;
    }
    empty = false;
  }
  lines.push(line);
  return lines.join('\n');
}

const code = (text: string) => `\`${text}\``;
const list = (items: readonly string[]) => items.map(code).join(', ');

export interface ReadmeOptions {
  blueprintName: string;
  /** Absolute output folder: handler paths are shown relative to it. */
  outDir: string;
  /** The entry points of the build (dist/<entry>.js). */
  entries: string[];
  /** The MCP tools of /mcp (contract/mcp-tools.ts), by name and description. */
  mcpTools: ReadonlyArray<{ name: string; description: string }>;
}

export function emitReadme(bp: Blueprint, options: ReadmeOptions): string {
  const emailAuth = bp.auth.providers.includes('email');
  const apiKeys = bp.auth.apiKeys.map((k) =>
    wrap(
      `${code(k.keyEnv)}: the key of ${code(k.name)}` +
        `${k.displayName !== k.name ? ` (${k.displayName})` : ''}, agent id ` +
        `${code(k.agentId)}; roles: ${k.roles.length ? list(k.roles) : 'none'}; scopes: ` +
        `${k.scopes.length ? list(k.scopes) : 'none'}.`,
      '- ',
      '  ',
    ),
  );
  const commands = bp.commands.map((c) => {
    const route = `${code(`POST /api/commands/${c.operationId}/:id`)}`;
    if (!c.handler) return wrap(`${code(c.name)} (${route}): no handler, the blueprint's mutations only.`, '- ', '  ');
    const file = path.relative(options.outDir, c.handler.file).split(path.sep).join('/');
    return wrap(
      `${code(c.name)} (${route}): export ${code(c.handler.exportName)} of ${code(file)} ` +
        `(${code(c.handler.source)} in the blueprint).`,
      '- ',
      '  ',
    );
  });
  const jobWorkflows = new Set(bp.workflows.filter(startedByHand).map((w) => w.name));
  const skillActions = bp.skills.flatMap((skill) =>
    skill.actions
      .filter((a) => (a.entity && a.action && !a.workflow) || (a.workflow && jobWorkflows.has(a.workflow)))
      .map((a) =>
        wrap(
          `${code(`${a.method} ${a.route}`)} (${code(`${skill.name}.${a.name}`)}): ` +
            (a.workflow
              ? `starts workflow ${code(a.workflow)} (202 and a job)`
              : `${a.action} ${code(a.entity as string)}`) +
            `${a.scopes.length ? `; API keys need ${list(a.scopes)}` : ''}` +
            `${skill.auth === 'none' ? '; no credential needed' : ''}.`,
          '- ',
          '  ',
        ),
      ),
  );
  const webhooks = bp.workflows.flatMap((w) =>
    w.trigger.kind === 'webhook'
      ? [
          wrap(
            `${code(`POST ${w.trigger.route}`)} starts ${code(w.name)}` +
              (w.trigger.secretEnv
                ? `; the caller proves it knows the secret in ${code(w.trigger.secretEnv)}.`
                : ': anyone may call it (it has no `webhookSecretEnv`), and its steps run as an anonymous caller.'),
            '- ',
            '  ',
          ),
        ]
      : [],
  );
  const schedules = bp.workflows.flatMap((w) =>
    w.trigger.kind === 'schedule' ? [wrap(`${code(w.trigger.cron)} (UTC) starts ${code(w.name)}.`, '- ', '  ')] : [],
  );
  const workflowActions = bp.skills.flatMap((s) =>
    s.actions.filter((a) => a.workflow && !jobWorkflows.has(a.workflow)).map((a) => `${s.name}.${a.name}`),
  );
  const customAdapters = bp.notifications.adapters.filter((a) => !['console', 'email', 'slack'].includes(a.type));
  const served = bp.pages.filter(pageServed);
  const unserved = bp.pages.filter((p) => !pageServed(p));
  const leftOut = bp.skills.flatMap((s) => s.notServed.map((a) => `${s.name}.${a.name}`));
  const notServed = [
    workflowActions.length && `skill actions that start a workflow: ${list(workflowActions)}`,
    leftOut.length && `skill actions whose query parameter names no field of their entity: ${list(leftOut)}`,
    unserved.length &&
      `pages: ${list(unserved.map((p) => p.route))}` +
        (unserved.some((p) => p.route === '/') ? " (the app's index page is served at `/` instead)" : ''),
    customAdapters.length > 0 && `notification adapters not built in: ${list(customAdapters.map((a) => a.name))}`,
  ]
    .filter((line): line is string => typeof line === 'string')
    .map((line) => wrap(line, '- ', '  '));
  const records = bp.auth.userRecords;
  const userRecords =
    records &&
    wrap(
      `People are the records of ${code(records.entity)}: ` +
        'sign-up (`POST /api/auth/signup`, `{ email, password, ...fields }`) ' +
        `creates one, and people sign in with its ${code(records.loginField)} in any letter case. ` +
        (records.roleFields.length ? `Its ${list(records.roleFields)} give roles, with those of \`set-roles\`; ` : '') +
        'someone with no role at all holds `user`. Passwords stay out of the record (in `_bp_users`). ' +
        '`npm run users -- add --email E --field name=value` creates a record with a password, ' +
        '`update --email E --field name=value` changes one, and `list` shows their ids.',
    );
  const publicEntities = publicActions(bp).map((p) =>
    wrap(`${code(p.entity)} (${code(`/api/${p.collection}`)}): anyone may ${p.actions.join(', ')}.`, '- ', '  '),
  );
  return render('app/README.md.hbs', {
    name: bp.project.name,
    description: bp.project.description ? wrap(bp.project.description) : '',
    blueprint: options.blueprintName,
    emailAuth,
    authDeclared: bp.auth.declared,
    userRecords,
    publicEntities,
    signup: bp.auth.signup,
    loginPath: bp.auth.loginPath,
    entities: bp.entities.map((e) => ({ name: e.name, collection: e.collection })),
    uploads: list(bp.entities.filter((e) => e.fields.some((f) => f.type === 'file')).map((e) => e.name)),
    apiKeys,
    adapterVariables: adapterVariables(bp),
    commands,
    skillActions,
    mcpTools: options.mcpTools.map((t) => wrap(`${code(t.name)}: ${t.description}`, '- ', '  ')),
    webhooks,
    schedules,
    notServed,
    // A page the blueprint serves at `/` replaces the index.
    index:
      !served.some((p) => p.route === '/') &&
      wrap(
        `\`/\` is the app's index page: its name, ${emailAuth ? 'sign-in (or who is signed in, and sign-out), ' : ''}` +
          `${served.length ? 'the pages this person may open, ' : ''}` +
          "and a link to the API's description, `/api/openapi.json`.",
      ),
    pages: served.map((p) =>
      wrap(
        `${code(expressPath(p.route))}: ${pageTitle(p, bp.project.name)}, a ${p.layout} page` +
          (p.auth === 'required' ? ' for signed-in people' : ', open to anyone'),
        '- ',
        '  ',
      ),
    ),
    builds: options.entries.map((entry) => `dist/${entry}.js`).join(', '),
  });
}

/**
 * The environment variables the notification adapters read, as rows of the configuration table:
 * each `<key>Env` of a config, and Zebric's SLACK_BOT_TOKEN and SLACK_DEFAULT_CHANNEL where a
 * Slack adapter names no variable of its own. Only an app with workflows sends notifications.
 */
function adapterVariables(bp: Blueprint): string[] {
  if (bp.workflows.length === 0) return [];
  const rows = new Map<string, string>();
  for (const a of bp.notifications.adapters) {
    const config = a.config;
    for (const [key, value] of Object.entries(config)) {
      if (key.endsWith('Env') && typeof value === 'string' && !rows.has(value)) {
        rows.set(value, `\`${key.slice(0, -3)}\` of notification adapter \`${a.name}\` (${a.type})`);
      }
    }
    if (a.type !== 'slack') continue;
    if (config.botTokenEnv === undefined && !rows.has('SLACK_BOT_TOKEN'))
      rows.set('SLACK_BOT_TOKEN', `bot token of Slack adapter \`${a.name}\``);
    if (config.defaultChannel === undefined && config.defaultChannelEnv === undefined)
      rows.set('SLACK_DEFAULT_CHANNEL', `default channel of Slack adapter \`${a.name}\``);
  }
  return [...rows].map(([name, meaning]) => `| \`${name}\` | unset | ${meaning} |`);
}
