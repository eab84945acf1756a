// Cross-reference rules of commands: their entity, mutations, handler modules, operation ids.

import * as path from 'node:path';
import type { CompileContext } from '../../context.ts';
import { refTarget, refValueProblem } from '../../model/keys.ts';
import { expectedLiteral, showLiteral } from '../../model/literals.ts';
import type { Blueprint, Command, Entity, Field, MutationValue } from '../../model/types.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { isInside } from '../../source.ts';
import { didYouMean } from '../../suggest.ts';
import { moduleExports } from '../handler-exports.ts';
import { actorKeyProblem } from '../names/actor.ts';
import { entityNamed, fieldNamed, names, unknownEntity, unknownField } from './common.ts';

export function commandEntities(ctx: CompileContext, bp: Blueprint): void {
  for (const c of bp.commands) if (!entityNamed(bp, c.entity)) unknownEntity(ctx, bp, [...c.path, 'entity'], c.entity);
}

export function commandMutations(ctx: CompileContext, bp: Blueprint): void {
  for (const command of bp.commands) {
    const entity = entityNamed(bp, command.entity);
    if (!entity) continue;
    for (const { field: name, value } of command.mutations) {
      const at: KeyPath = [...command.path, 'mutations', name];
      mutationValueNames(ctx, bp, command, entity, at, value);
      const field = fieldNamed(entity, name);
      if (!field) {
        unknownField(ctx, entity, at, name);
        continue;
      }
      if (field.primaryKey)
        ctx.report('INVALID_MUTATION', at, `command "${command.name}" cannot change the primary key`);
      if (field.commandOnly && field.commands && !field.commands.includes(command.name)) {
        ctx.report(
          'PROTECTED_FIELD_MUTATION',
          at,
          `field "${name}" may be written only by ${field.commands.join(', ')}`,
          {
            hint: `add "${command.name}" to the field's commands list`,
          },
        );
      }
      mutationValueType(ctx, bp, at, field, value);
    }
  }
}

/** `input.<k>`, `record.<k>` and `actor.<k>` must name something; reported at the name. */
function mutationValueNames(
  ctx: CompileContext,
  bp: Blueprint,
  command: Command,
  entity: Entity,
  at: KeyPath,
  value: MutationValue,
): void {
  if (value.kind !== 'ref') return;
  const within = { offset: value.root.length + 1, part: 'value' as const };
  if (value.root === 'input' && !command.input.some((i) => i.name === value.key)) {
    ctx.report('UNKNOWN_INPUT', at, `mutation reads input.${value.key}, which the command does not declare`, {
      hint: didYouMean(value.key, names(command.input)),
      within,
    });
  }
  if (value.root === 'record' && !fieldNamed(entity, value.key)) {
    ctx.report(
      'UNKNOWN_FIELD',
      at,
      `mutation reads record.${value.key}, but entity "${entity.name}" has no field "${value.key}"`,
      {
        hint: didYouMean(value.key, names(entity.fields)),
        within,
      },
    );
  }
  const keys = value.key.split('.');
  const problem = value.root === 'actor' ? actorKeyProblem(bp, keys, 'mutation') : undefined;
  if (problem) {
    const offset = within.offset + keys.slice(0, problem.index).reduce((sum, k) => sum + k.length + 1, 0);
    const message =
      problem.index === 0 && keys.length === 1 ? `actor.${value.key} is not part of the actor` : problem.message;
    ctx.report('UNKNOWN_ACTOR_KEY', at, message, {
      hint: problem.hint,
      within: { ...within, offset },
    });
  }
}

/** A literal or `now` must fit the field; a field of unknown type or an Enum without values has its own error. */
function mutationValueType(ctx: CompileContext, bp: Blueprint, at: KeyPath, field: Field, value: MutationValue): void {
  if (field.unknownType !== undefined || (field.type === 'Enum' && !field.values?.length)) return;
  if (value.kind === 'now' && field.type !== 'DateTime' && field.type !== 'Date') {
    ctx.report('INVALID_MUTATION', at, `"now" is a time but ${field.name} is ${field.type}`);
  }
  const expected = value.kind === 'literal' ? expectedLiteral(field.type, value.value, field.values) : undefined;
  if (value.kind === 'literal' && expected) {
    ctx.report(
      'INVALID_MUTATION',
      at,
      `${showLiteral(value.value)} does not fit ${field.type} field "${field.name}": expected ${expected}`,
    );
  } else if (value.kind === 'literal' && field.type === 'Ref') {
    // A literal id must be one the Ref's target can hold (a broken Ref has its own error).
    const target = refTarget(bp, field);
    const problem = target && refValueProblem(target, value.value);
    if (problem)
      ctx.report(
        'INVALID_MUTATION',
        at,
        `${showLiteral(value.value)} does not fit field "${field.name}", a ${problem}`,
      );
  }
}

export function commandHandlers(ctx: CompileContext, bp: Blueprint): void {
  for (const command of bp.commands) {
    if (!command.handler) continue;
    const at: KeyPath = [...command.path, 'handler'];
    const { file, exportName } = command.handler;
    const real = ctx.host.realPath(file);
    if (!isInside(ctx.parsed.rootDir, real ?? path.resolve(file))) {
      ctx.report(
        'HANDLER_OUTSIDE_ROOT',
        at,
        `handler "${command.handler.source}" leaves the blueprint's root folder ` +
          ctx.host.display(ctx.parsed.rootDir),
        {
          hint: 'keep handler modules in the folder of the root blueprint or below it',
        },
      );
      continue;
    }
    const source = real === undefined ? undefined : ctx.host.readFile(real);
    if (source === undefined) {
      ctx.report('HANDLER_NOT_FOUND', at, `handler file ${ctx.host.display(file)} does not exist`, {
        hint: 'handler paths are relative to the TOML file that declares the command',
      });
      continue;
    }
    const exports = moduleExports(source, file);
    if (!exports.ok) {
      ctx.report('HANDLER_UNREADABLE', at, `handler ${ctx.host.display(file)} does not parse: ${exports.message}`);
    } else if (!exports.names.includes(exportName)) {
      ctx.report(
        'HANDLER_EXPORT_MISSING',
        at,
        `${ctx.host.display(file)} has no ${exportName === 'default' ? 'default export' : `export "${exportName}"`}`,
        {
          hint: exports.names.length ? `it exports ${exports.names.join(', ')}` : 'it exports nothing',
        },
      );
    }
  }
}

export function operationIds(ctx: CompileContext, bp: Blueprint): void {
  const seen = new Map<string, Command>();
  for (const c of bp.commands) {
    const other = seen.get(c.operationId);
    if (other) {
      ctx.report(
        'OPERATION_ID_COLLISION',
        c.path,
        `commands "${other.name}" and "${c.name}" share the operation id "${c.operationId}"`,
        {
          hint: 'an operation id is the snake_case form of the command name; rename one of them',
        },
      );
    }
    seen.set(c.operationId, c);
  }
}
