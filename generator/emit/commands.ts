// src/commands.ts: every command of the blueprint as a typed spec for the one executor
// (runtime/commands/executor.ts), importing user handlers from where the blueprint names them. bp never
// copies or edits a handler; the generated code only imports it.

import * as path from 'node:path';
import type { Condition } from '../../runtime-lib/rules/conditions.ts';
import { pathsOf } from '../../runtime-lib/rules/expression-parse.ts';
import type { Blueprint, Command, CommandInput, Entity, Rule } from '../model/types.ts';
import { entityFileName, tsType } from './entities.ts';
import { lowerFirst, refRelations, upperFirst, type RefRelation } from './relations.ts';
import { render } from './templates.ts';
import { tsLiteral, tsString } from './ts-literal.ts';

/** Record paths a condition reads (`record.customer.name` -> ['customer', 'name']). */
function recordPaths(condition: Condition | undefined): string[][] {
  if (!condition) return [];
  switch (condition.kind) {
    case 'expr':
      return pathsOf(condition.expr).filter((p) => p.root === 'record').map((p) => p.keys);
    case 'match':
      return condition.pairs.flatMap((p) => [p.left, p.right]).flatMap((o) => (o.kind === 'record' ? [o.keys] : []));
    case 'and':
    case 'or':
      return condition.items.flatMap(recordPaths);
    default:
      return [];
  }
}

function includesOf(command: Command, entity: Entity, relations: RefRelation[]): Array<Record<string, unknown>> {
  const names = [...new Set([...recordPaths(command.policy?.condition), ...recordPaths(command.availableWhen?.condition)].filter((k) => k.length > 1).map((k) => k[0]))].sort();
  return names.flatMap((name): Array<Record<string, unknown>> => {
    const forward = relations.find((r) => r.from === entity && r.forward === name);
    if (forward) return [{ name, entity: forward.to.name, kind: 'one', localKey: forward.field.name, foreignKey: forward.field.ref?.field }];
    const back = relations.find((r) => r.to === entity && r.back === name);
    if (back) return [{ name, entity: back.from.name, kind: back.backIsOne ? 'one' : 'many', localKey: back.field.ref?.field, foreignKey: back.field.name }];
    return [];
  });
}

function mutationSpec(m: Command['mutations'][number]['value']): unknown {
  if (m.kind === 'literal') return { literal: m.value };
  if (m.kind === 'now') return { now: true };
  return { [m.root]: m.key };
}

function inputType(input: CommandInput): string {
  const t = tsType({ type: input.type, values: input.values, nullable: false } as never);
  return `  ${input.name}${input.required ? '' : '?'}: ${t};`;
}

/** Import specifier from the generated file to a handler module, always relative, with '/' separators. */
function importPath(fromDir: string, file: string): string {
  const rel = path.relative(fromDir, file).split(path.sep).join('/');
  return rel.startsWith('.') ? rel : `./${rel}`;
}

export function emitCommands(bp: Blueprint, outDir: string): string {
  const relations = refRelations(bp);
  const handlerImports = new Map<string, { local: string; exportName: string; from: string }>();
  const commands = bp.commands.map((c) => {
    const entity = bp.entities.find((e) => e.name === c.entity) as Entity;
    const constName = lowerFirst(c.name);
    let handler: string | undefined;
    if (c.handler) {
      const local = `${constName}Handler`;
      handlerImports.set(local, { local, exportName: c.handler.exportName, from: importPath(path.join(outDir, 'src'), c.handler.file) });
      handler = local;
    }
    const conditionComment = (label: string, rule: Rule | undefined) =>
      rule ? `  // ${label}: ${typeof rule.source === 'string' ? rule.source : JSON.stringify(rule.source)}` : undefined;
    return {
      constName,
      name: c.name,
      label: c.label,
      operationId: c.operationId,
      entityType: entity.name,
      entityFile: entityFileName(entity),
      inputName: `${upperFirst(c.name)}Input`,
      inputFields: c.input.map(inputType),
      lines: [
        `  name: ${tsString(c.name)},`,
        `  operationId: ${tsString(c.operationId)},`,
        `  entity: ${tsString(c.entity)},`,
        `  scopes: ${tsLiteral(c.scopes)},`,
        conditionComment('policy', c.policy),
        c.policy ? `  policy: ${tsLiteral(c.policy.condition)},` : undefined,
        conditionComment('availableWhen', c.availableWhen),
        c.availableWhen ? `  availableWhen: ${tsLiteral(c.availableWhen.condition)},` : undefined,
        `  input: ${tsLiteral(c.input.map((i) => ({ name: i.name, type: i.type, required: i.required, values: i.values })))},`,
        `  mutations: ${tsLiteral(Object.fromEntries(c.mutations.map((m) => [m.field, mutationSpec(m.value)])))},`,
        `  includes: ${tsLiteral(includesOf(c, entity, relations))},`,
        handler ? `  handler: ${handler},` : undefined,
      ].filter((l): l is string => l !== undefined),
    };
  });
  const entityImports = [...new Map(commands.map((c) => [c.entityType, { type: c.entityType, file: c.entityFile }])).values()].sort((a, b) => (a.type < b.type ? -1 : 1));
  return render('app/src/commands.ts.hbs', {
    commands,
    entityImports,
    handlerImports: [...handlerImports.values()].map((h) => ({
      ...h,
      clause: h.exportName === 'default' ? h.local : `{ ${h.exportName} as ${h.local} }`,
    })),
  });
}
