// Names inside conditions must resolve at generate time: `record.<field>` and record paths of
// condition tables against the entity, `actor.<key>` and `$currentUser.<key>` against the actor,
// `input.<key>` against the command's inputs. Otherwise `record.stauts` validates and the app
// then refuses every request. Each problem points at the name itself.

import type { CompileContext } from '../../context.ts';
import type { Blueprint, CommandInput, Entity, Rule } from '../../model/types.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { actorKeyProblem } from './actor.ts';
import { conditionNames, type NameRef } from './condition-names.ts';
import { RecordPaths, type PathProblem } from './record-paths.ts';

interface Scope {
  /** Entities whose record the condition reads: one, or every entity for a `*` permission. */
  records: Entity[];
  loadsRelations: boolean;
  command?: { name: string; input: CommandInput[] };
}

export function conditionNameRules(ctx: CompileContext, bp: Blueprint): void {
  const paths = new RecordPaths(bp);
  const check = (at: KeyPath, rule: Rule | undefined, scope: Scope) => {
    if (rule) for (const ref of conditionNames(rule.source)) checkName(ctx, bp, paths, at, ref, scope);
  };
  for (const entity of bp.entities) {
    const scope: Scope = { records: [entity], loadsRelations: false };
    for (const [action, rule] of Object.entries(entity.access)) check([...entity.path, 'access', action], rule, scope);
    for (const field of entity.fields) {
      for (const [key, rule] of Object.entries(field.access)) check([...field.path, 'access', key], rule, scope);
    }
  }
  for (const command of bp.commands) {
    const entity = bp.entities.find((e) => e.name === command.entity);
    const scope: Scope = { records: entity ? [entity] : [], loadsRelations: true, command };
    check([...command.path, 'policy'], command.policy, scope);
    check([...command.path, 'availableWhen'], command.availableWhen, scope);
  }
  for (const [role, rules] of Object.entries(bp.auth.permissions ?? {})) {
    for (const kind of ['allow', 'deny'] as const) {
      for (const rule of rules[kind]) {
        const at = ctx.declaredAt.get(rule) ?? ['auth', 'permissions', role, kind];
        const records = rule.entity === '*' ? bp.entities : bp.entities.filter((e) => e.name === rule.entity);
        check([...at, 'condition'], rule.condition, { records, loadsRelations: false });
      }
    }
  }
}

function checkName(
  ctx: CompileContext,
  bp: Blueprint,
  paths: RecordPaths,
  at: KeyPath,
  ref: NameRef,
  scope: Scope,
): void {
  const report = (code: string, index: number, message: string, hint?: string) =>
    ctx.report(code, [...at, ...ref.at], message, { hint, within: { offset: ref.offsets[index], part: ref.part } });
  const key = ref.keys[0];
  if (key === undefined) return;
  const actorProblem =
    ref.root === 'actor' ? actorKeyProblem(bp, ref.keys, ref.currentUser ? 'currentUser' : 'expression') : undefined;
  if (actorProblem) {
    report('UNKNOWN_ACTOR_KEY', actorProblem.index, actorProblem.message, actorProblem.hint);
  } else if (ref.root === 'actor') {
    return;
  } else if (ref.root === 'input' && scope.command && !scope.command.input.some((i) => i.name === key)) {
    const inputs = scope.command.input.map((i) => i.name);
    const hint =
      didYouMean(key, inputs) ?? (inputs.length ? `inputs: ${inputs.join(', ')}` : 'the command declares no input');
    report('UNKNOWN_INPUT', 0, `command "${scope.command.name}" has no input "${key}"`, hint);
  } else if (ref.root === 'record' && scope.records.length) {
    const problem = recordProblem(paths, scope, ref.keys);
    if (problem) report('UNKNOWN_FIELD', problem.index, problem.message, problem.hint);
  }
}

/**
 * For one entity, its problem. A `*` permission reads whichever entity is asked about: a path is
 * fine when any entity has it (on the others the rule simply never matches), and reported once
 * when none does.
 */
function recordProblem(paths: RecordPaths, scope: Scope, keys: string[]): PathProblem | undefined {
  const problems = scope.records.map((e) => paths.problem(e, keys, scope.loadsRelations));
  if (problems.length === 1) return problems[0];
  if (problems.includes(undefined)) return undefined;
  const holder = scope.records.findIndex((e) => e.fields.some((f) => f.name === keys[0]));
  if (holder >= 0) return problems[holder];
  const fields = [...new Set(scope.records.flatMap((e) => e.fields.map((f) => f.name)))];
  return { index: 0, message: `no entity has a field "${keys[0]}"`, hint: didYouMean(keys[0], fields) };
}
