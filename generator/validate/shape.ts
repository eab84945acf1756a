// Shape check: every section against its JSON Schema (ajv). Unknown keys become warnings with a
// "did you mean"; the rest are errors.

import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { Diagnostic } from '../diagnostics.ts';
import { formatPath } from '../diagnostics.ts';
import {
  ARRAY_FORMS,
  canonicalOf,
  NAMED_KINDS,
  PRESENTATIONAL_KEYS,
  SINGLETON_KINDS,
  type ParsedBlueprint,
  type Section,
} from '../parse/load.ts';
import type { KeyPath } from '../parse/locate.ts';
import { didYouMean } from '../suggest.ts';
import { SECTION_SCHEMAS } from './schema.ts';

const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
const validators = new Map<string, ValidateFunction>();

function validatorFor(kind: string): ValidateFunction {
  let v = validators.get(kind);
  if (!v) {
    v = ajv.compile(SECTION_SCHEMAS[kind]);
    validators.set(kind, v);
  }
  return v;
}

const TOP_LEVEL_KEYS = [
  'imports',
  ...SINGLETON_KINDS,
  ...NAMED_KINDS,
  ...Object.keys(ARRAY_FORMS),
  ...PRESENTATIONAL_KEYS,
];

export function checkShapes(bp: ParsedBlueprint): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const section of bp.sections) {
    if (section.kind === 'unknown') {
      out.push({
        code: 'UNKNOWN_KEY',
        severity: 'warning',
        path: section.name,
        message: `unknown top-level key "${section.name}" is ignored`,
        hint: didYouMean(section.name, TOP_LEVEL_KEYS),
        location: bp.locate([section.name]),
      });
      continue;
    }
    const validate = validatorFor(section.kind);
    if (validate(section.value)) continue;
    out.push(...mapErrors(bp, section, validate.errors ?? []));
  }
  return out;
}

function mapErrors(bp: ParsedBlueprint, section: Section, errors: ErrorObject[]): Diagnostic[] {
  // A failed oneOf or anyOf also reports every branch's failures; keep only its summary.
  const isAlternatives = (e: ErrorObject) => e.keyword === 'oneOf' || e.keyword === 'anyOf';
  const alternativePaths = errors.filter(isAlternatives).map((e) => e.instancePath);
  const kept = errors.filter(
    (e) =>
      isAlternatives(e) || !alternativePaths.some((p) => e.instancePath === p || e.instancePath.startsWith(`${p}/`)),
  );
  const seen = new Set<string>();
  const out: Diagnostic[] = [];
  for (const e of kept) {
    const keys: (string | number)[] = [...canonicalOf(section), ...pointerKeys(e.instancePath)];
    if (e.keyword === 'additionalProperties') {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      const known = Object.keys(((e.parentSchema ?? {}) as { properties?: object }).properties ?? {});
      out.push({
        code: 'UNKNOWN_KEY',
        severity: 'warning',
        path: formatPath([...keys, key]),
        message: `unknown key "${key}" is ignored`,
        hint: didYouMean(key, known),
        location: bp.locate([...keys, key]),
      });
      continue;
    }
    const path =
      e.keyword === 'required' ? [...keys, String((e.params as { missingProperty: string }).missingProperty)] : keys;
    const id = `${formatPath(path)}|${e.keyword}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({
      code: e.keyword === 'required' ? 'MISSING_KEY' : 'INVALID_VALUE',
      severity: 'error',
      path: formatPath(path),
      message: describe(e),
      hint:
        e.keyword === 'enum' && typeof e.data === 'string'
          ? didYouMean(e.data, (e.params as { allowedValues: string[] }).allowedValues)
          : undefined,
      location: bp.locate(e.keyword === 'required' ? keys : path),
    });
  }
  return out;
}

function pointerKeys(pointer: string): KeyPath {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((k) => (/^\d+$/.test(k) ? Number(k) : k));
}

function describe(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `"${String(p.missingProperty)}" is required`;
    case 'type': {
      const t = String(p.type);
      if (t === 'boolean,string,object') return 'must be a condition: true/false, a string or a table';
      const names = t.split(',').map(article);
      return `must be ${names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names[0]}`;
    }
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'pattern':
      return e.instancePath.endsWith('keyEnv')
        ? 'must be an environment variable name (letters, digits, underscores)'
        : `must start with ${String(p.pattern).includes('webhooks') ? '"/webhooks/"' : '"/"'}`;
    case 'minLength':
      return 'must not be empty';
    case 'minItems':
      return `must have at least ${String(p.limit)} item(s)`;
    case 'minimum':
      return `must be at least ${String(p.limit)}`;
    case 'maximum':
      return `must be at most ${String(p.limit)}`;
    case 'minProperties':
      return 'must not be empty';
    case 'oneOf':
      return 'must be an "Entity.action" pattern or a { entity, actions, condition } table';
    case 'anyOf':
      // The one anyOf: a delay step's duration.
      return 'must be a number of milliseconds (0 or more) or a template string';
    default:
      return e.message ?? 'is invalid';
  }
}

function article(type: string): string {
  const names: Record<string, string> = {
    string: 'a string',
    boolean: 'a boolean',
    integer: 'an integer',
    number: 'a number',
    object: 'a table',
    array: 'a list',
  };
  return names[type] ?? type;
}
