// Warnings about what the rules let an actor do, which the author may not have meant:
// OPEN_SIGNUP (anyone can sign up and then write, call skill actions, run commands or start
// workflows), OPEN_SIGNUP_RISK (such a person may call an external or destructive skill action),
// UNSCOPED_WRITE (an API key's scopes do not limit writes to entities that declare no write
// scopes), PUBLIC_ENTITY (without [auth], anyone may act on an entity), COMMAND_WITHOUT_AUTH
// (without [auth], nobody can run a command) and
// ROLE_FIELD_WRITABLE (a person could give themselves roles through their User record). They read
// the rules three-valued: a rule that depends on the record counts as letting the actor.
// UNSIGNED_WEBHOOK: a webhook trigger without a secret lets anyone start its workflow.

import type { CompileContext } from '../../context.ts';
import { publicActions } from '../../model/access-defaults.ts';
import { singleSection } from '../../model/raw.ts';
import type { Blueprint, EntityAction } from '../../model/types.ts';
import { apiKeyActor, mayAct, signedUpActor } from './may-act.ts';
import { runnableCommands, startableActions, startableWorkflows } from './may-start.ts';
import type { ActorFacts } from './three-valued.ts';

const WRITES: EntityAction[] = ['create', 'update', 'delete'];

export function checkSecurity(ctx: CompileContext, bp: Blueprint): void {
  openSignup(ctx, bp);
  unscopedWrites(ctx, bp);
  publicEntities(ctx, bp);
  commandsWithoutAuth(ctx, bp);
  writableRoleFields(ctx, bp);
  unsignedWebhooks(ctx, bp);
}

function unsignedWebhooks(ctx: CompileContext, bp: Blueprint): void {
  for (const workflow of bp.workflows) {
    if (workflow.trigger.kind !== 'webhook' || workflow.trigger.secretEnv !== undefined) continue;
    ctx.report(
      'UNSIGNED_WEBHOOK',
      [...workflow.path, 'trigger', 'webhook'],
      `anyone may POST to ${workflow.trigger.route} and start ${workflow.name}`,
      {
        severity: 'warning',
        hint:
          'add webhookSecretEnv = "<VARIABLE>" naming the environment variable that holds the secret ' +
          'its callers prove they know; without it the steps run as an anonymous caller',
      },
    );
  }
}

function publicEntities(ctx: CompileContext, bp: Blueprint): void {
  for (const { entity, actions } of publicActions(bp)) {
    const model = bp.entities.find((e) => e.name === entity);
    if (!model || ctx.failed([...model.path, 'access'])) continue;
    ctx.report(
      'PUBLIC_ENTITY',
      model.path,
      `the blueprint has no [auth], so anyone may ${listActions(actions)} ${entity} records`,
      {
        severity: 'warning',
        hint:
          'add [auth] (people or API keys) and access rules, ' +
          'or write the rules you mean, e.g. access = { read = "public", create = false }',
      },
    );
  }
}

function commandsWithoutAuth(ctx: CompileContext, bp: Blueprint): void {
  if (bp.auth.declared) return;
  for (const command of bp.commands) {
    ctx.report(
      'COMMAND_WITHOUT_AUTH',
      command.path,
      `the blueprint has no [auth], so nobody can run ${command.name}: ` +
        'a command needs a signed-in person or an API key',
      {
        severity: 'warning',
        hint: 'add [auth] with providers = ["email"] or [[auth.apiKeys]]',
      },
    );
  }
}

/**
 * When people are User records, its `role` / `roles` fields give roles: a person who may update
 * User records, and so possibly their own, could give themselves any role, unless the field is
 * command-only or has a write rule.
 */
function writableRoleFields(ctx: CompileContext, bp: Blueprint): void {
  const records = bp.auth.userRecords;
  const user = records && bp.entities.find((e) => e.name === records.entity);
  if (!records || !user) return;
  const may = mayAct(ctx, bp, user, 'update', signedUpActor(bp));
  if (may === undefined || may === 'no') return;
  for (const name of records.roleFields) {
    const field = user.fields.find((f) => f.name === name);
    if (!field || field.commandOnly || field.access.write) continue;
    ctx.report(
      'ROLE_FIELD_WRITABLE',
      field.path,
      `${user.name}.${name} gives its person roles, and a person who signs up may update ${user.name} records: ` +
        'they could give themselves any role',
      {
        severity: 'warning',
        hint: `make it write = "command-only", or give it access = { write = "actor.roles contains 'admin'" }`,
      },
    );
  }
}

function listActions(actions: readonly string[]): string {
  return actions.length < 2
    ? actions.join('')
    : `${actions.slice(0, -1).join(', ')} and ${actions[actions.length - 1]}`;
}

/** Writes `actor` may make, per entity: `Comment (create, update, delete)`. */
function writesOf(ctx: CompileContext, bp: Blueprint, actor: ActorFacts, entities = bp.entities): string[] {
  return entities.flatMap((entity) => {
    const actions = WRITES.filter((action) => {
      const may = mayAct(ctx, bp, entity, action, actor);
      return may !== undefined && may !== 'no';
    });
    return actions.length ? [`${entity.name} (${actions.join(', ')})`] : [];
  });
}

/**
 * What anyone who signs up may do at once: the writes, skill actions (with their risk), commands
 * and workflows a new account may start, in one warning; then one louder warning per skill action
 * of risk "external" or "destructive" among them (people are not held to scopes, so its scopes
 * do not stop them).
 */
function openSignup(ctx: CompileContext, bp: Blueprint): void {
  if (!bp.auth.providers.includes('email') || !bp.auth.signup) return;
  const actor = signedUpActor(bp);
  const writes = writesOf(ctx, bp, actor);
  const actions = startableActions(ctx, bp, actor);
  const commands = runnableCommands(ctx, bp, actor);
  const workflows = startableWorkflows(ctx, bp, actor, actions);
  const may = [
    ...(writes.length ? [`write ${writes.join(', ')}`] : []),
    ...(actions.length
      ? [`call skill actions ${actions.map((a) => `${a.skill.name}.${a.action.name} (${a.risk})`).join(', ')}`]
      : []),
    ...(commands.length ? [`run commands ${commands.map((c) => `${c.name} (${c.entity})`).join(', ')}`] : []),
    ...(workflows.length ? [`start workflows ${workflows.join(', ')}`] : []),
  ];
  if (!may.length) return;
  const written = singleSection(ctx.parsed, 'auth').signup !== undefined;
  const roles = actor.values.roles;
  const who = roles.length ? `roles: ${roles.join(', ')}` : 'no roles';
  ctx.report(
    'OPEN_SIGNUP',
    written ? ['auth', 'signup'] : ['auth'],
    `anyone may sign up, and a new account (${who}) may ${may.join('; ')}`,
    {
      severity: 'warning',
      hint: 'set auth.signup = false and add people with the users command, or require a role in these rules',
    },
  );
  for (const { skill, action, risk } of actions) {
    if (risk !== 'external' && risk !== 'destructive') continue;
    const what = risk === 'external' ? 'reaches outside the app' : 'destroys data';
    ctx.report(
      'OPEN_SIGNUP_RISK',
      action.path,
      `anyone who signs up (${who}) may call ${skill.name}.${action.name}, which ${what} (risk "${risk}"): ` +
        'its scopes hold API keys, not people',
      {
        severity: 'warning',
        hint:
          action.workflow !== undefined
            ? 'set auth.signup = false and add people with the users command: ' +
              'a workflow action admits every signed-in person'
            : `set auth.signup = false, or require a role in ${action.entity}'s access rule for ${action.action}`,
      },
    );
  }
}

function unscopedWrites(ctx: CompileContext, bp: Blueprint): void {
  const unscoped = bp.entities.filter((e) => e.scopes.write.length === 0);
  for (const key of bp.auth.apiKeys) {
    const at = ctx.declaredAt.get(key) ?? ['auth', 'apiKeys'];
    if (key.scopes.length === 0 || ctx.failed(at)) continue;
    const writes = writesOf(ctx, bp, apiKeyActor(key), unscoped);
    if (!writes.length) continue;
    // A write scope the key holds, else one it lacks (so the key could not write at all).
    const scope = key.scopes.find((s) => s.endsWith('write')) ?? key.scopes[0].replace(/read$/, 'write');
    const message =
      `API key "${key.name}" has scopes, but may write ${writes.join(', ')}, which declare no scopes.write: ` +
      'its scopes do not limit these writes';
    ctx.report('UNSCOPED_WRITE', at, message, {
      severity: 'warning',
      hint: `require a scope for writing, e.g. scopes = { write = ["${scope}"] } on these entities`,
    });
  }
}
