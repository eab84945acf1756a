// Primary keys and what points at them: which types a key may have, the field a Ref points at,
// and whether a value can be an id of it (Ref defaults and mutation literals, at generate time,
// with the rules the app applies to every request: runtime-lib/core/ids.ts).

import { KEY_TYPES, keyProblem, type KeyType } from '../../runtime-lib/core/ids.ts';
import type { FieldType } from '../../runtime-lib/core/values.ts';
import { expectedLiteral } from './literals.ts';
import type { Blueprint, Command, CommandInput, Entity, Field } from './types.ts';

export const isKeyType = (type: FieldType): type is KeyType => (KEY_TYPES as readonly string[]).includes(type);

/** Whether the database holds values of this type as numbers (Integer keys and Refs to them). */
export const isIntegerKey = (type: FieldType): boolean => type === 'Integer';

/** The entity and field a Ref field points at, once the target resolves (validate's refTargets fills in the field). */
export function refTarget(bp: Blueprint, field: Pick<Field, 'ref'>): { entity: Entity; field: Field } | undefined {
  const entity = field.ref && bp.entities.find((e) => e.name === field.ref?.entity);
  const target = entity?.fields.find((f) => f.name === field.ref?.field);
  return entity && target ? { entity, field: target } : undefined;
}

/**
 * The type of the values a Ref holds: its target's (a key's type, or a unique field's). A Ref
 * whose target does not resolve has its own error; it is read as a string id.
 */
export function refValueType(bp: Blueprint, field: Pick<Field, 'ref'>): FieldType {
  return refTarget(bp, field)?.field.type ?? 'Text';
}

/**
 * Why `value` cannot be stored in a Ref to `target`, naming the target and its key type
 * ("Ref to Board.id, a ULID key: an id must be a ULID"), or undefined when it can.
 */
export function refValueProblem(target: { entity: Entity; field: Field }, value: unknown): string | undefined {
  const { entity, field } = target;
  const shown = `Ref to ${entity.name}.${field.name}`;
  if (field.primaryKey && isKeyType(field.type)) {
    const problem = keyProblem(field.type, value);
    return problem && `${shown}, ${field.type === 'Integer' ? 'an' : 'a'} ${field.type} key: an id ${problem.message}`;
  }
  const expected = expectedLiteral(field.type, value, field.values);
  return expected && `${shown} (${field.type}): expected ${expected}`;
}

/**
 * The Ref target of a command input of type Ref: the target of the Ref fields its mutations
 * write it to, when they agree on one key type. Undefined when no mutation writes it to a Ref (a
 * handler reads it): any record id is accepted then.
 */
export function inputRefTarget(
  bp: Blueprint,
  command: Command,
  input: CommandInput,
): { entity: Entity; field: Field } | undefined {
  if (input.type !== 'Ref') return undefined;
  const entity = bp.entities.find((e) => e.name === command.entity);
  const targets = command.mutations
    .filter((m) => m.value.kind === 'ref' && m.value.root === 'input' && m.value.key === input.name)
    .map((m) => entity?.fields.find((f) => f.name === m.field))
    .flatMap((f) => (f?.type === 'Ref' ? [refTarget(bp, f)] : []));
  const first = targets[0];
  if (
    !first ||
    targets.some((t) => !t || t.field.type !== first.field.type || t.field.primaryKey !== first.field.primaryKey)
  )
    return undefined;
  return first;
}
