// A detail page's commands as forms that post back to the page (command-actions.ts runs them): a
// button with the command's label and style, a field per input, and the page's view of the
// record (`_seen`), so that a command sent from a page that no longer shows the record as it is
// is refused. Without JavaScript, a command with `confirm` asks on a page of its own first.

import { createHash } from 'node:crypto';
import type { CommandInputSpec } from '../commands/executor.ts';
import type { Row } from '../data/database.ts';
import type { ErrorDetail } from '../core/errors.ts';
import { html, type Html } from './html.ts';
import type { PageCommandSpec } from './page-spec.ts';
import { humanize } from './values.ts';

/** One command as offered: the page's spec of it and its declared input. */
export interface OfferedCommand {
  page: PageCommandSpec;
  input: readonly CommandInputSpec[];
}

/** A refused command's message and the input sent, shown again in its form. */
export interface CommandFailure {
  command: string;
  message: string;
  details: readonly ErrorDetail[];
  sent: Readonly<Record<string, string>>;
}

export interface CommandFormsOptions {
  commands: readonly OfferedCommand[];
  seen: string;
  csrfToken?: string;
  failure?: CommandFailure;
}

/** What the page showed of the record: a digest of its fields as this viewer saw them. */
export function recordDigest(record: Row): string {
  const sorted = Object.keys(record)
    .sort()
    .map((k) => [k, record[k]]);
  return createHash('sha256').update(JSON.stringify(sorted)).digest('base64url');
}

export function commandForms(options: CommandFormsOptions): Html {
  if (options.commands.length === 0) return html``;
  const forms = options.commands.map((c) => commandForm(c, options));
  return html`<h2>Actions</h2>\n<div class="actions">\n${forms}</div>\n`;
}

function commandForm(command: OfferedCommand, options: CommandFormsOptions): Html {
  const failure = options.failure?.command === command.page.name ? options.failure : undefined;
  const style = command.page.style ?? 'primary';
  const alert = failure ? html`<p class="flash error" role="alert">${failure.message}</p>\n` : '';
  const inputs = command.input.map((input) => inputControl(command.page.name, input, failure));
  return html`<form method="post" aria-label="${command.page.label}">
${hiddenFields(command.page.name, options)}${alert}${inputs}\
<button type="submit" class="${style}">${command.page.label}</button>
</form>
`;
}

/**
 * The question a command's `confirm` asks, in place of the page's actions: the input sent so far
 * travels on, hidden, with `_confirmed`; "Cancel" is a link back to the page.
 */
export function confirmForm(
  command: OfferedCommand,
  options: CommandFormsOptions & { cancelHref: string; sent: Readonly<Record<string, string>> },
): Html {
  const style = command.page.style ?? 'primary';
  const carried = command.input.map((i) =>
    options.sent[i.name] !== undefined
      ? html`<input type="hidden" name="${i.name}" value="${options.sent[i.name]}">\n`
      : '',
  );
  return html`<h2>Confirm</h2>
<section class="panel" role="alertdialog" aria-labelledby="confirm-question">
<p id="confirm-question">${command.page.confirm ?? ''}</p>
<form method="post">
${hiddenFields(command.page.name, options)}<input type="hidden" name="_confirmed" value="1">
${carried}<button type="submit" class="${style}">${command.page.label}</button>
<a href="${options.cancelHref}">Cancel</a>
</form>
</section>
`;
}

function hiddenFields(name: string, options: { seen: string; csrfToken?: string }): Html {
  const csrf = options.csrfToken ? html`<input type="hidden" name="_csrf" value="${options.csrfToken}">\n` : '';
  return html`${csrf}<input type="hidden" name="_action" value="command">
<input type="hidden" name="_command" value="${name}">
<input type="hidden" name="_seen" value="${options.seen}">
`;
}

/** The control of one input: a checkbox, a select of its values, a text area, or an input of its type. */
function inputControl(command: string, input: CommandInputSpec, failure: CommandFailure | undefined): Html {
  const id = `${command}-${input.name}`;
  const sent = failure?.sent[input.name];
  const problem = failure?.details.find((d) => d.field === input.name);
  const error = problem ? html`<span class="field-error" id="${id}-error">${problem.message}</span>` : '';
  const described = problem ? html` aria-describedby="${id}-error" aria-invalid="true"` : '';
  const required = input.required ? html` required` : '';
  const label = html`<label for="${id}">${humanize(input.name)}${input.required ? '' : ' (optional)'}</label>`;
  if (input.type === 'Boolean') {
    const checked = sent ? html` checked` : '';
    return html`<label><input type="checkbox" id="${id}" name="${input.name}"${checked}${described}> \
${humanize(input.name)}</label>${error}\n`;
  }
  if (input.values?.length) {
    const empty = input.required ? '' : html`<option value=""></option>`;
    const options = input.values.map((v) => html`<option${v === sent ? html` selected` : ''}>${v}</option>`);
    return html`${label}${error}<select id="${id}" name="${input.name}"${required}${described}>
${empty}${options}</select>\n`;
  }
  if (input.type === 'LongText') {
    return html`${label}${error}<textarea id="${id}" name="${input.name}" rows="3"${required}${described}>\
${sent ?? ''}</textarea>\n`;
  }
  const step = input.type === 'Float' ? html` step="any"` : '';
  return html`${label}${error}<input id="${id}" name="${input.name}" type="${INPUT_TYPES[input.type] ?? 'text'}"\
${step} value="${sent ?? ''}"${required}${described}>\n`;
}

const INPUT_TYPES: Readonly<Record<string, string>> = {
  Integer: 'number',
  Float: 'number',
  Email: 'email',
  Date: 'date',
};

/**
 * A form's fields as the command's input: numbers and booleans as such, an empty optional field
 * left out (the executor checks the rest, as it does a JSON body's).
 */
export function commandInput(input: readonly CommandInputSpec[], sent: Readonly<Record<string, string>>): Row {
  const out: Row = {};
  for (const field of input) {
    const value = sent[field.name];
    if (field.type === 'Boolean') {
      out[field.name] = value !== undefined && value !== '';
      continue;
    }
    if (value === undefined || value === '') continue;
    const number = Number(value);
    // What is not a number stays text: the executor's check names the field.
    out[field.name] = (field.type === 'Integer' || field.type === 'Float') && Number.isFinite(number) ? number : value;
  }
  return out;
}
