// The controls of a page's form (form-spec.ts), one per field: a label on every control, the
// field's refused input beside it (linked by aria-describedby), the browser's own checks from the
// blueprint (required, pattern, min, max, accept), and nothing that needs JavaScript.

import type { ErrorDetail } from '../core/errors.ts';
import { html, type Html } from './html.ts';
import type { FormOption, PageFormFieldSpec, PageFormSectionSpec } from './form-spec.ts';
import { humanize } from './values.ts';

/** What a control shows: the value as the browser would send it, its choices, its problem. */
export interface ControlState {
  value: string | undefined;
  /** Checkbox: ticked. */
  checked: boolean;
  choices: readonly FormOption[];
  problem?: ErrorDetail;
}

export function fieldLabel(field: PageFormFieldSpec): string {
  return field.label ?? humanize(field.name);
}

export function formControl(field: PageFormFieldSpec, state: ControlState): Html {
  const id = `field-${field.name}`;
  const errorId = `${id}-error`;
  const error = state.problem ? html`<span class="field-error" id="${errorId}">${state.problem.message}</span>\n` : '';
  const described = state.problem ? html` aria-describedby="${errorId}" aria-invalid="true"` : '';
  const required = field.required ? html` required` : '';
  const text = fieldLabel(field);
  const label = html`<label for="${id}">${text}${field.required ? '' : html` <span class="none">(optional)</span>`}\
</label>\n`;
  const placeholder = field.placeholder ? html` placeholder="${field.placeholder}"` : '';
  const value = state.value ?? '';
  switch (field.type) {
    case 'hidden':
      return html`<input type="hidden" name="${field.name}" value="${value}">\n`;
    case 'checkbox':
      return html`<div class="field check"><label for="${id}"><input type="checkbox" id="${id}" name="${field.name}" \
value="on"${state.checked ? html` checked` : ''}${required}${described}> ${text}</label>
${error}</div>\n`;
    case 'radio': {
      const options = state.choices.map(
        (o, i) => html`<label class="choice"><input type="radio" id="${id}-${i}" name="${field.name}" \
value="${o.value}"${o.value === value ? html` checked` : ''}${required}${described}> ${o.label}</label>\n`,
      );
      return html`<fieldset class="field" id="${id}"${described}><legend>${text}\
${field.required ? '' : html` <span class="none">(optional)</span>`}</legend>
${error}${options}</fieldset>\n`;
    }
    case 'select':
    case 'lookup': {
      const empty = emptyChoice(field);
      const options = state.choices.map(
        (o) => html`<option value="${o.value}"${o.value === value ? html` selected` : ''}>${o.label}</option>\n`,
      );
      return html`<div class="field">${label}${error}<select id="${id}" name="${field.name}"${required}${described}>
${empty === undefined ? '' : html`<option value="">${empty}</option>\n`}${options}</select></div>\n`;
    }
    case 'textarea':
      return html`<div class="field">${label}${error}<textarea id="${id}" name="${field.name}" \
rows="${field.rows ?? 4}"${placeholder}${required}${described}>${value}</textarea></div>\n`;
    case 'file': {
      const accept = field.accept?.length ? html` accept="${field.accept.join(',')}"` : '';
      const current = value ? html`<span class="none">Now: ${value}</span>\n` : '';
      return html`<div class="field">${label}${error}${current}<input type="file" id="${id}" name="${field.name}"\
${accept}${required}${described}></div>\n`;
    }
    default: {
      const type = INPUT_TYPES[field.type] ?? 'text';
      const pattern = field.pattern !== undefined ? html` pattern="${field.pattern}"` : '';
      const bounds =
        field.type === 'number'
          ? html`${field.min !== undefined ? html` min="${field.min}"` : ''}\
${field.max !== undefined ? html` max="${field.max}"` : ''} step="any"`
          : '';
      // A password is never sent back to the browser.
      const shown = field.type === 'password' ? '' : value;
      const autocomplete = field.type === 'password' ? html` autocomplete="new-password"` : '';
      return html`<div class="field">${label}${error}<input type="${type}" id="${id}" name="${field.name}" \
value="${shown}"${placeholder}${pattern}${bounds}${autocomplete}${required}${described}></div>\n`;
    }
  }
}

const INPUT_TYPES: Readonly<Record<string, string>> = {
  text: 'text',
  email: 'email',
  password: 'password',
  number: 'number',
  date: 'date',
  datetime: 'datetime-local',
};

/** The first, empty choice of a select: Zebric's `emptyLabel`, a lookup's placeholder, or none for a required one. */
function emptyChoice(field: PageFormFieldSpec): string | undefined {
  if (field.optionsFrom?.emptyLabel !== undefined) return field.optionsFrom.emptyLabel;
  if (field.type === 'lookup') return field.lookup?.placeholder ?? (field.required ? 'Choose…' : '');
  return field.required ? undefined : '';
}

/**
 * The form's controls: its sections as fieldsets (title as legend, description under it), then
 * the fields no section names, in the blueprint's order.
 */
export function formBody(
  fields: readonly PageFormFieldSpec[],
  sections: readonly PageFormSectionSpec[] | undefined,
  control: (field: PageFormFieldSpec) => Html,
): Html {
  if (!sections?.length) return html`${fields.map(control)}`;
  const byName = new Map(fields.map((f) => [f.name, f]));
  const placed = new Set<string>();
  const parts = sections.map((section) => {
    const inside = section.fields.flatMap((name) => {
      const field = byName.get(name);
      if (!field || placed.has(name)) return [];
      placed.add(name);
      return [field];
    });
    const legend = section.title ? html`<legend>${section.title}</legend>\n` : '';
    const description = section.description ? html`<p class="none">${section.description}</p>\n` : '';
    const layout = section.layout ?? 'single-column';
    return html`<fieldset class="form-section ${layout}">
${legend}${description}<div class="section-fields">
${inside.map(control)}</div>
</fieldset>\n`;
  });
  return html`${parts}${fields.filter((f) => !placed.has(f.name)).map(control)}`;
}
