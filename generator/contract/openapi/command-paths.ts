// The path of one command: POST /api/commands/<operationId>/{id}, its input and its rules.

import { inputRefTarget } from '../../model/keys.ts';
import type { Blueprint, Command, CommandInput, Entity, Field, Rule } from '../../model/types.ts';
import { idParameter } from './entity-paths.ts';
import {
  errorResponse,
  IDEMPOTENCY_HEADER,
  json,
  ref,
  RUN_ID_HEADER,
  schemeNames,
  TRACE_HEADER,
  type Schema,
} from './common.ts';
import { fieldSchema } from './schemas.ts';

function conditionText(rule: Rule | undefined): string | undefined {
  if (!rule) return undefined;
  return typeof rule.source === 'string' ? rule.source : JSON.stringify(rule.source);
}

/** A Ref input's target, as a field's `ref`: from the mutations that write it, if they agree. */
function inputRef(bp: Blueprint, command: Command, input: CommandInput): Field['ref'] {
  const target = inputRefTarget(bp, command, input);
  return target && { entity: target.entity.name, field: target.field.name };
}

export function commandPath(bp: Blueprint, command: Command): Record<string, Schema> {
  const entity = bp.entities.find((e) => e.name === command.entity) as Entity;
  const inputSchema = {
    type: 'object',
    properties: Object.fromEntries(
      command.input.map((i) => [
        i.name,
        {
          ...fieldSchema(bp, {
            ...i,
            ref: inputRef(bp, command, i),
            nullable: false,
            primaryKey: false,
            commandOnly: false,
            access: {},
          } as unknown as Field),
          ...(i.description ? { description: i.description } : {}),
        },
      ]),
    ),
    required: command.input.filter((i) => i.required).map((i) => i.name),
    additionalProperties: false,
  };
  const schemes = schemeNames(bp);
  return {
    [`/api/commands/${command.operationId}/{id}`]: {
      post: {
        operationId: command.operationId,
        tags: [command.entity],
        summary: command.label,
        ...(command.description ? { description: command.description } : {}),
        ...(conditionText(command.policy) ? { 'x-policy': conditionText(command.policy) } : {}),
        ...(conditionText(command.availableWhen) ? { 'x-available-when': conditionText(command.availableWhen) } : {}),
        'x-scopes': [...command.scopes],
        ...(schemes.length
          ? { security: schemes.map((name) => ({ [name]: name === 'apiKey' ? [...command.scopes] : [] })) }
          : {}),
        parameters: [idParameter(entity), IDEMPOTENCY_HEADER, RUN_ID_HEADER],
        requestBody: { required: command.input.some((i) => i.required), content: json(inputSchema) },
        responses: {
          '200': {
            description: `The ${entity.name} after the command`,
            headers: TRACE_HEADER,
            content: json(ref(entity.name)),
          },
          '400': errorResponse('BadWriteRequest'),
          '401': errorResponse('Unauthenticated'),
          '403': errorResponse('Forbidden'),
          '404': errorResponse('NotFound'),
          '409': errorResponse('Conflict'),
          '413': errorResponse('PayloadTooLarge'),
          '415': errorResponse('UnsupportedMediaType'),
          '422': errorResponse('UnprocessableEntity'),
          '500': errorResponse('InternalError'),
          '503': errorResponse('ServiceUnavailable'),
        },
      },
    },
  };
}
