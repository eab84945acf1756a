// Cron expressions of schedule triggers. Zebric 0.6 keeps them as text and never runs them; the
// workflow runtime that will has to read them, so a malformed one is refused now rather than
// accepted and silently never fired. Standard syntax only: five fields (six with seconds first),
// each `*`, a number or name, a range `a-b`, a step `/n`, or a comma list of those; `?` for a day.

const MACROS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

interface Unit {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** `?` (no specific value) is allowed in the day fields. */
  any?: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const SECOND: Unit = { name: 'second', min: 0, max: 59 };
const FIVE_FIELDS: Unit[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31, any: true },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  // 7 is Sunday too, as in most cron implementations.
  { name: 'day of week', min: 0, max: 7, names: DAYS, any: true },
];

/** Why `expression` is not a cron expression, or undefined when it is one. */
export function cronProblem(expression: string): string | undefined {
  const text = expression.trim();
  if (text.startsWith('@')) return MACROS.has(text.toLowerCase()) ? undefined : `unknown macro "${text}"`;
  const fields = text.split(/\s+/).filter((f) => f !== '');
  const units = fields.length === 6 ? [SECOND, ...FIVE_FIELDS] : FIVE_FIELDS;
  if (fields.length !== 5 && fields.length !== 6) return `it has ${fields.length} field(s), not 5 or 6`;
  for (let i = 0; i < fields.length; i++) {
    const problem = fieldProblem(fields[i], units[i]);
    if (problem) return `${units[i].name} ${problem}`;
  }
  return undefined;
}

function fieldProblem(field: string, unit: Unit): string | undefined {
  if (field === '?' && unit.any) return undefined;
  for (const item of field.split(',')) {
    const problem = itemProblem(item, unit);
    if (problem) return problem;
  }
  return undefined;
}

function itemProblem(item: string, unit: Unit): string | undefined {
  const [range, step, ...rest] = item.split('/');
  if (rest.length || range === '') return `"${item}" is not a value, range or step`;
  if (step !== undefined && !/^[1-9]\d*$/.test(step)) return `"${item}" has a step that is not a positive number`;
  if (range === '*') return undefined;
  const bounds = range.split('-');
  if (bounds.length > 2) return `"${item}" is not a value, range or step`;
  const values = bounds.map((b) => valueOf(b, unit));
  const bad = bounds.find((_, i) => values[i] === undefined);
  if (bad !== undefined) {
    const orName = unit.names ? ` or a name (${unit.names[0]}...)` : '';
    return `"${bad}" is not a number from ${unit.min} to ${unit.max}${orName}`;
  }
  if (values.length === 2 && (values[0] as number) > (values[1] as number)) return `range "${range}" runs backwards`;
  return undefined;
}

function valueOf(text: string, unit: Unit): number | undefined {
  const named = unit.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return named + unit.min;
  if (!/^\d{1,2}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= unit.min && n <= unit.max ? n : undefined;
}
