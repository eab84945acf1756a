// A field's value written as text, where text is all there is: an input of the sign-up form, a
// `--field name=value` of the users command, a path or query parameter of a skill action. The
// text becomes the JSON value the field's type takes (numbers, booleans, JSON); the entity's own
// validation then checks it like any body.

import type { FieldSpec } from './fields.ts';

const NUMBER = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

export type TextValue = { ok: true; value: unknown } | { ok: false; message: string };

export function valueFromText(field: Pick<FieldSpec, 'name' | 'type'>, text: string): TextValue {
  switch (field.type) {
    case 'Integer':
    case 'Float':
      // Anything else stays text, which the field's validation refuses with its own message.
      return { ok: true, value: NUMBER.test(text.trim()) ? Number(text.trim()) : text };
    case 'Boolean':
      if (text === 'true' || text === 'false') return { ok: true, value: text === 'true' };
      return { ok: false, message: `${field.name} must be true or false` };
    case 'JSON':
      try {
        return { ok: true, value: JSON.parse(text) };
      } catch {
        return { ok: false, message: `${field.name} must be JSON (quote a string: '"text"')` };
      }
    default:
      return { ok: true, value: text };
  }
}
