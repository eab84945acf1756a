// Rules on one command declaration: its name, inputs, effect, handler syntax and conditions.

import type { CompileContext } from '../../context.ts';
import { isInputType, parseHandler } from '../../model/build-sections.ts';
import { COMMAND_ROOTS } from '../../model/conditions.ts';
import { strList, table, text, type Raw } from '../../model/raw.ts';
import { FIELD_TYPES } from '../../../runtime-lib/core/values.ts';
import { isTable, type Section } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { checkIdentifier } from './common.ts';
import { checkCondition } from './conditions.ts';

export function checkCommand(ctx: CompileContext, section: Section & { value: Raw }): void {
  const { name, value: raw } = section;
  const at: KeyPath = ['command', name];
  checkIdentifier(ctx, at, name, 'command');
  for (const [inputName, def] of Object.entries(table(raw.input))) {
    if (isTable(def)) checkInput(ctx, [...at, 'input', inputName], inputName, def);
  }
  effect(ctx, at, name, raw);
  if (typeof raw.handler === 'string' && !parseHandler(raw.handler, section.origin.file.absPath)) {
    ctx.report(
      'INVALID_HANDLER',
      [...at, 'handler'],
      `handler "${raw.handler}" is not "path/to/module.ts" or "path/to/module.ts#exportName"`,
      {
        hint: 'e.g. handler = "./handlers/tickets.ts#closeTicket"',
      },
    );
  }
  checkCondition(ctx, [...at, 'policy'], raw.policy, COMMAND_ROOTS);
  checkCondition(ctx, [...at, 'availableWhen'], raw.availableWhen, COMMAND_ROOTS);
}

function checkInput(ctx: CompileContext, at: KeyPath, name: string, def: Raw): void {
  checkIdentifier(ctx, at, name, 'input');
  const type = text(def.type);
  if (!isInputType(type)) {
    ctx.report('UNKNOWN_FIELD_TYPE', [...at, 'type'], `unknown input type "${type}"`, {
      hint: didYouMean(type, FIELD_TYPES) ?? `input types: ${FIELD_TYPES.filter((t) => t !== 'file').join(', ')}`,
    });
  } else if (type === 'Enum' && !(def.values !== undefined && strList(def.values).length)) {
    ctx.report('ENUM_WITHOUT_VALUES', at, `Enum input "${name}" has no values`);
  }
}

/** Spec 2.3 rule 1: a command changes something, through mutations or a handler. */
function effect(ctx: CompileContext, at: KeyPath, name: string, raw: Raw): void {
  // Malformed mutations already have a shape error; "neither" would be a second report.
  const noMutations =
    raw.mutations === undefined || (isTable(raw.mutations) && Object.keys(raw.mutations).length === 0);
  if (raw.handler === undefined && noMutations) {
    ctx.report('COMMAND_WITHOUT_EFFECT', at, `command "${name}" has neither mutations nor a handler`, {
      hint: 'add mutations = { field = value } or handler = "./handlers/file.ts#name"',
    });
  }
}
