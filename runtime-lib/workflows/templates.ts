// `{{ path }}` in workflow steps: resolved when the step runs, against the run's context
// (variables.data.record, variables.data.payload, variables.data.attribution, the results steps
// stored with assignTo). A string that is one template and nothing else takes the value as it is (a
// number stays a number); a template inside other text is written into it. A path that does not
// resolve fails the step and names the path, rather than writing "{{ ... }}" into a record.

import { AppError } from '../core/errors.ts';

const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const WHOLE = /^\{\{\s*([^{}]*?)\s*\}\}$/;

/** Sets `key` on `target` as an own property, whatever its name (`__proto__` included): never the prototype. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Sets `name` on `target` as its own property (a step named `__proto__` included), unless there is no value. */
export function define(target: Record<string, unknown>, name: unknown, value: unknown): void {
  if (typeof name === 'string' && value !== undefined) setOwn(target, name, value);
}

/** Every string inside `value` (objects and arrays included) with its templates resolved. */
export function resolveTemplates(value: unknown, context: unknown): unknown {
  if (typeof value === 'string') return resolveString(value, context);
  if (Array.isArray(value)) return value.map((v) => resolveTemplates(v, context));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      setOwn(out, key, resolveTemplates(v, context));
    }
    return out;
  }
  return value;
}

function resolveString(text: string, context: unknown): unknown {
  const whole = WHOLE.exec(text);
  if (whole) return lookup(context, whole[1]);
  return text.replace(TEMPLATE, (_, path: string) => format(lookup(context, path)));
}

/** The value at a dotted path: own properties only, so `__proto__` or `constructor` resolve to nothing. */
export function lookup(context: unknown, path: string): unknown {
  let value: unknown = context;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) {
      throw new AppError('WORKFLOW_TEMPLATE_UNRESOLVED', `{{ ${path} }} does not resolve: there is no "${key}"`);
    }
    value = (value as Record<string, unknown>)[key];
  }
  if (value === undefined) throw new AppError('WORKFLOW_TEMPLATE_UNRESOLVED', `{{ ${path} }} does not resolve`);
  return value;
}

function format(value: unknown): string {
  if (value === null) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
