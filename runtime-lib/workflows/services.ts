// Service steps (Zebric's `service`): a workflow calls an operation of a declared `[service.X]`,
// which the app's src/extend.ts implements as `services.X.<operation>` (the services command
// handlers get too). The blueprint declares each operation's typed input and result, and both are
// checked here: a step cannot hand the code a value of another shape, nor the code return one into
// the workflow (WORKFLOW_STEP_INVALID, naming the path of the value).

import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { FieldType } from '../core/values.ts';
import { normalizeValue, PROTOTYPE_KEYS } from '../data/fields.ts';
import { setOwn } from './templates.ts';

/** A typed value (Zebric's ExternalValueSchema): a field type, an Object of fields or an Array of items. */
export interface ServiceValueSpec {
  type: FieldType | 'Object' | 'Array';
  required?: boolean;
  values?: readonly string[];
  fields?: Readonly<Record<string, ServiceValueSpec>>;
  items?: ServiceValueSpec;
  /** An Object may hold keys its fields do not name. */
  allowUnknown?: boolean;
}

export interface ServiceSpec {
  name: string;
  operations: Readonly<Record<string, ServiceOperationSpec>>;
}

export interface ServiceOperationSpec {
  input: Readonly<Record<string, ServiceValueSpec>>;
  result?: ServiceValueSpec;
}

/** What an operation of src/extend.ts gets besides its input. */
export interface ServiceCallContext {
  workflow: string;
  jobId: string;
}

type Operation = (input: Record<string, unknown>, ctx: ServiceCallContext) => unknown;

/**
 * Runs `service.operation` with `input`: checked against the declared input, the implementation
 * of src/extend.ts called, its result checked against the declared result.
 */
export async function callService(
  specs: ReadonlyMap<string, ServiceSpec>,
  implementations: Readonly<Record<string, unknown>>,
  call: { service: string; operation: string; input: unknown; ctx: ServiceCallContext },
): Promise<unknown> {
  const { service, operation } = call;
  const declared = specs.get(service)?.operations;
  const spec = declared && Object.hasOwn(declared, operation) ? declared[operation] : undefined;
  if (!spec) {
    throw new AppError('WORKFLOW_STEP_NOT_SUPPORTED', `service ${service} declares no operation ${operation}`);
  }
  const impl = ownFunction(ownValue(implementations, service), operation);
  if (!impl) {
    throw new AppError(
      'WORKFLOW_STEP_NOT_SUPPORTED',
      `service ${service}.${operation} has no implementation: ` +
        `register it in src/extend.ts (services.${service}.${operation})`,
    );
  }
  const inputSpec: ServiceValueSpec = { type: 'Object', required: true, fields: spec.input };
  const input = checked(call.input ?? {}, inputSpec, `${service}.${operation}`);
  const result = await impl(input as Record<string, unknown>, call.ctx);
  if (!spec.result) return result;
  return checked(result, spec.result, `the result of ${service}.${operation}`);
}

function ownValue(target: unknown, key: string): unknown {
  return typeof target === 'object' && target !== null && Object.hasOwn(target, key)
    ? (target as Record<string, unknown>)[key]
    : undefined;
}

function ownFunction(target: unknown, key: string): Operation | undefined {
  const value = ownValue(target, key);
  return typeof value === 'function' ? (value as Operation) : undefined;
}

/** The value in its canonical form, or WORKFLOW_STEP_INVALID listing every problem. */
function checked(value: unknown, spec: ServiceValueSpec, what: string): unknown {
  const issues: ErrorDetail[] = [];
  const out = normalize(value, spec, what, issues);
  if (issues.length) {
    throw new AppError('WORKFLOW_STEP_INVALID', issues.map((i) => i.message).join('; '), { details: issues });
  }
  return out;
}

function normalize(value: unknown, spec: ServiceValueSpec, at: string, issues: ErrorDetail[]): unknown {
  if (value === undefined || value === null) {
    if (spec.required) issues.push({ field: at, code: 'REQUIRED', message: `${at} is required` });
    return null;
  }
  if (spec.type === 'Array') {
    if (!Array.isArray(value)) {
      issues.push({ field: at, code: 'INVALID_TYPE', message: `${at} must be a list` });
      return null;
    }
    const items = spec.items ?? { type: 'JSON' };
    return value.map((item, i) => normalize(item, items, `${at}[${i}]`, issues));
  }
  if (spec.type === 'Object') {
    if (typeof value !== 'object' || Array.isArray(value)) {
      issues.push({ field: at, code: 'INVALID_TYPE', message: `${at} must be an object` });
      return null;
    }
    const fields = spec.fields ?? {};
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(fields)) {
      const v = Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
      const normalized = normalize(v, field, `${at}.${key}`, issues);
      if (v !== undefined) setOwn(out, key, normalized);
    }
    for (const key of Object.keys(value)) {
      if (Object.hasOwn(fields, key)) continue;
      if (spec.allowUnknown && !PROTOTYPE_KEYS.has(key)) setOwn(out, key, (value as Record<string, unknown>)[key]);
      else issues.push({ field: `${at}.${key}`, code: 'UNKNOWN_FIELD', message: `${at}.${key} is not declared` });
    }
    return out;
  }
  return normalizeValue({ name: at, type: spec.type, values: spec.values, required: spec.required }, value, issues);
}
