// src/commands.ts: every command of the blueprint as a typed spec for the one executor
// (runtime/commands/executor.ts), importing user handlers from where the blueprint names them.
// bp never copies or edits a handler; the generated code only imports it.

import * as path from 'node:path';
import type { Condition } from '../../runtime-lib/rules/conditions.ts';
import { pathsOf } from '../../runtime-lib/rules/expression-parse.ts';
import { inputRefTarget } from '../model/keys.ts';
import type { Blueprint, Command, CommandInput, Entity } from '../model/types.ts';
import { entityFileName, tsTypeMembers } from './entities.ts';
import {
  lowerFirst,
  type MatchRelation,
  matchRelations,
  refRelations,
  relationInclude,
  type RelationInclude,
  upperFirst,
  type RefRelation,
} from '../model/relations.ts';
import { ruleCall } from './rules.ts';
import { render } from './templates.ts';
import {
  code,
  MAX_WIDTH,
  nonEmpty,
  tsDocComment,
  tsLiteral,
  tsProperties,
  tsString,
  tsTypeMember,
} from './ts-literal.ts';

/** Record paths a condition reads (`record.customer.name` -> ['customer', 'name']). */
function recordPaths(condition: Condition | undefined): string[][] {
  if (!condition) return [];
  switch (condition.kind) {
    case 'expr':
      return pathsOf(condition.expr)
        .filter((p) => p.root === 'record')
        .map((p) => p.keys);
    case 'match':
      return condition.pairs.flatMap((p) => [p.left, p.right]).flatMap((o) => (o.kind === 'record' ? [o.keys] : []));
    case 'and':
    case 'or':
      return condition.items.flatMap(recordPaths);
    default:
      return [];
  }
}

/** The relations the command's policy and availableWhen read, to load with the record. */
function includesOf(
  command: Command,
  entity: Entity,
  relations: RefRelation[],
  matches: MatchRelation[],
): RelationInclude[] {
  const paths = [...recordPaths(command.policy?.condition), ...recordPaths(command.availableWhen?.condition)];
  const names = [...new Set(paths.filter((keys) => keys.length > 1).map((keys) => keys[0]))].sort();
  return names.flatMap((name) => {
    const include = relationInclude(entity, name, relations, matches);
    return include ? [include] : [];
  });
}

function mutationSpec(m: Command['mutations'][number]['value']): unknown {
  if (m.kind === 'literal') return { literal: m.value };
  if (m.kind === 'now') return { now: true };
  return { [m.root]: m.key };
}

function inputMember(bp: Blueprint, command: Command, input: CommandInput): string {
  const members = tsTypeMembers(
    { type: input.type, values: input.values, nullable: false },
    inputRefTarget(bp, command, input)?.field.type,
  );
  return tsTypeMember(`${input.name}${input.required ? '' : '?'}:`, members, 2);
}

/** What a Ref input must hold: the ids of the Ref fields its mutations write it to (when they agree). */
function inputRef(bp: Blueprint, command: Command, input: CommandInput): Record<string, unknown> | undefined {
  const target = inputRefTarget(bp, command, input);
  return target && { idType: target.field.type, primaryKey: target.field.primaryKey || undefined };
}

/** Import specifier from the generated file to a handler module, always relative, with '/' separators. */
function importPath(fromDir: string, file: string): string {
  const rel = path.relative(fromDir, file).split(path.sep).join('/');
  return rel.startsWith('.') ? rel : `./${rel}`;
}

interface HandlerImport {
  local: string;
  exportName: string;
}

/**
 * One import statement per handler module, naming each command's handler `<command>Handler`:
 * `import closeTicketHandler from '...'` for a lone default export, else braces, broken one
 * name per line when the statement would be too long.
 */
function importStatement(from: string, names: HandlerImport[]): string {
  const specifier = `from ${tsString(from)};`;
  if (names.length === 1 && names[0].exportName === 'default') return `import ${names[0].local} ${specifier}`;
  const parts = names.map((n) => (n.exportName === n.local ? n.local : `${n.exportName} as ${n.local}`));
  const oneLine = `import { ${parts.join(', ')} } ${specifier}`;
  if (oneLine.length <= MAX_WIDTH) return oneLine;
  return `import {\n${parts.map((p) => `  ${p},\n`).join('')}} ${specifier}`;
}

export function emitCommands(bp: Blueprint, outDir: string): string {
  const relations = refRelations(bp);
  const matches = matchRelations(bp);
  const handlerModules = new Map<string, HandlerImport[]>();
  const commands = bp.commands.map((c) => {
    const entity = bp.entities.find((e) => e.name === c.entity) as Entity;
    const constName = lowerFirst(c.name);
    let handler: string | undefined;
    if (c.handler) {
      handler = `${constName}Handler`;
      const from = importPath(path.join(outDir, 'src'), c.handler.file);
      const names = handlerModules.get(from) ?? [];
      handlerModules.set(from, [...names, { local: handler, exportName: c.handler.exportName }]);
    }
    const inputName = `${upperFirst(c.name)}Input`;
    return {
      constName,
      name: c.name,
      doc: tsDocComment(`${c.name} (${c.operationId}): ${c.label}`, 0),
      entityType: entity.name,
      entityFile: entityFileName(entity),
      inputName,
      inputMembers: c.input.map((i) => inputMember(bp, c, i)),
      properties: tsProperties(
        {
          name: c.name,
          operationId: c.operationId,
          entity: c.entity,
          scopes: nonEmpty(c.scopes),
          policy: c.policy && ruleCall(c.policy),
          availableWhen: c.availableWhen && ruleCall(c.availableWhen),
          input: nonEmpty(
            c.input.map((i) => ({
              name: i.name,
              type: i.type,
              required: i.required,
              values: i.values,
              ref: inputRef(bp, c, i),
            })),
          ),
          // Empty ones say nothing: the runtime reads a missing one as empty.
          mutations: nonEmpty(Object.fromEntries(c.mutations.map((m) => [m.field, mutationSpec(m.value)]))),
          includes: nonEmpty(includesOf(c, entity, relations, matches)),
          handler: handler && code(handler),
        },
        2,
      ),
    };
  });
  const entityFiles = new Map(commands.map((c) => [c.entityType, c.entityFile]));
  const entityImports = [...entityFiles].sort(([a], [b]) => (a < b ? -1 : 1)).map(([type, file]) => ({ type, file }));
  return render('app/src/commands.ts.hbs', {
    commands,
    entityImports,
    usesRules: bp.commands.some((c) => c.policy || c.availableWhen),
    all: tsLiteral(
      commands.map((c) => code(c.constName)),
      { lead: 'export const COMMANDS = '.length, trail: 10 },
    ),
    handlerImports: [...handlerModules]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([from, names]) => importStatement(from, names)),
  });
}
