import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { parse as parseToml, stringify } from 'smol-toml';
import { validateBlueprint } from '../generator/compile.ts';
import type { Diagnostic } from '../generator/diagnostics.ts';
import type { Blueprint } from '../generator/model/types.ts';
import { nodeSourceHost, type SourceHost } from '../generator/source.ts';

const REPO = path.resolve(import.meta.dirname, '..');
const INVALID = path.join(import.meta.dirname, 'fixtures', 'invalid');
const VALID = path.join(import.meta.dirname, 'fixtures', 'valid');

/** A fixture path as diagnostics show it (relative to the working directory). */
const shown = (rel: string): string => nodeSourceHost().display(path.join(INVALID, rel));

interface Expected {
  at: string;
  code: string;
  severity?: 'error' | 'warning';
  path: string;
  message: string;
  hint?: string;
}

/** Every field a user sees, with the location reduced to `basename:line:column`. */
function seen(d: Diagnostic): Expected {
  const at = d.location ? `${path.basename(d.location.file)}:${d.location.line}:${d.location.column}` : '(no location)';
  return { at, code: d.code, severity: d.severity, path: d.path, message: d.message, hint: d.hint };
}

function validate(file: string) {
  return validateBlueprint(file, nodeSourceHost());
}

/** Diagnostics of a one-file blueprint held in memory as /bp/app.toml. */
function validateText(text: string): Diagnostic[] {
  const host: SourceHost = {
    readFile: (p) => (p === '/bp/app.toml' ? text : undefined),
    realPath: (p) => (p === '/bp/app.toml' || p === '/bp' ? p : undefined),
    display: (p) => path.basename(p),
  };
  return validateBlueprint('/bp/app.toml', host).diagnostics;
}

/**
 * A fixture per rule, breaking only that rule (several-errors, odd-shapes, array-forms and
 * no-cascade-others break several on purpose); `root` defaults to app.toml. NOT_GENERATED
 * warnings are compared only where a case expects one: elsewhere skills, workflows and pages are
 * just the context of the rule a fixture breaks. So are the warnings of a blueprint without
 * [auth] (PUBLIC_ENTITY, COMMAND_WITHOUT_AUTH): most fixtures leave [auth] out; and a webhook's
 * without a secret (UNSIGNED_WEBHOOK, tested in workflow-triggers.test.ts).
 */
const CONTEXT_WARNINGS = ['NOT_GENERATED', 'PUBLIC_ENTITY', 'COMMAND_WITHOUT_AUTH', 'UNSIGNED_WEBHOOK'];
const CASES: Array<{ fixture: string; root?: string; expected: Expected[] }> = [
  {
    fixture: 'access-expression',
    expected: [
      {
        at: 'app.toml:9:29',
        code: 'INVALID_CONDITION',
        path: 'entity.Expense.access.update',
        message: 'expression does not parse: unknown root "input" (expected one of actor, record, now)',
      },
      {
        at: 'app.toml:10:31',
        code: 'INVALID_CONDITION',
        path: 'entity.Expense.access.delete',
        message: 'expression does not parse: expected expression after "contains"',
      },
    ],
  },
  {
    fixture: 'after-commit-result',
    expected: [
      {
        at: 'app.toml:12:59',
        code: 'RESULT_AFTER_COMMIT',
        path: 'workflow.Sync.steps.1.data',
        message:
          'variables.crm is the result of a webhook step, which runs after this transactional workflow commits: ' +
          'it does not exist while this step runs',
        hint:
          'read it in a step that runs after the commit (notify, email, webhook, plugin), ' +
          'or make the workflow not transactional',
      },
      {
        at: 'app.toml:13:25',
        code: 'RESULT_AFTER_COMMIT',
        path: 'workflow.Sync.steps.2.if',
        message:
          'variables.tagged is the result of a plugin step, ' +
          'which runs after this transactional workflow commits: it does not exist while this step runs',
        hint:
          'read it in a step that runs after the commit (notify, email, webhook, plugin), ' +
          'or make the workflow not transactional',
      },
    ],
  },
  {
    fixture: 'api-key-duplicate',
    expected: [
      {
        at: 'app.toml:11:1',
        code: 'DUPLICATE_DEFINITION',
        path: 'auth.apiKeys.1.name',
        message: 'two API keys are named "bookkeeper"',
      },
      {
        at: 'app.toml:14:1',
        code: 'DUPLICATE_DEFINITION',
        path: 'auth.apiKeys.1.credentialId',
        message: 'credential id "cred-books" is used by two API keys',
      },
    ],
  },
  {
    fixture: 'array-forms',
    expected: [
      {
        at: 'app.toml:10:21',
        code: 'UNKNOWN_FIELD_TYPE',
        path: 'entity.Expense.fields.1.type',
        message: 'unknown field type "Decimal"',
        hint:
          'field types: ULID, UUID, Text, LongText, Email, Integer, Float, Boolean, Date, DateTime, JSON, ' +
          'Enum, Ref, file',
      },
      {
        at: 'app.toml:13:1',
        code: 'COMMAND_WITHOUT_EFFECT',
        path: 'command.ApproveExpense',
        message: 'command "ApproveExpense" has neither mutations nor a handler',
        hint: 'add mutations = { field = value } or handler = "./handlers/file.ts#name"',
      },
      {
        at: 'app.toml:19:1',
        code: 'UNKNOWN_ENTITY',
        path: 'command.RejectExpense.entity',
        message: 'entity "Expens" does not exist',
        hint: 'did you mean "Expense"?',
      },
      {
        at: 'app.toml:27:1',
        code: 'UNKNOWN_ENTITY',
        path: 'page."/expenses".query.expenses.entity',
        message: 'entity "Expenses" does not exist',
        hint: 'did you mean "Expense"?',
      },
      {
        at: 'app.toml:32:29',
        code: 'UNKNOWN_ADAPTER',
        path: 'workflow.Notify.steps.0.adapter',
        message: 'notification adapter "slack" is not declared',
        hint: 'declare it under [[notifications.adapters]]',
      },
      {
        at: 'app.toml:36:96',
        code: 'INVALID_RISK',
        path: 'skill.expenses.actions.0.risk',
        message: 'a GET skill action reads, so its risk is "read", not "write"',
        hint: 'write risk = "read", or leave it out',
      },
    ],
  },
  {
    fixture: 'command-of-other-entity',
    expected: [
      {
        at: 'app.toml:9:13',
        code: 'COMMAND_OF_OTHER_ENTITY',
        path: 'entity.Expense.protection.commands.0',
        message: 'command "RenameEmployee" belongs to entity "Employee", not "Expense"',
      },
    ],
  },
  {
    fixture: 'command-only-unknown-command',
    expected: [
      {
        at: 'app.toml:4:124',
        code: 'UNKNOWN_COMMAND',
        path: 'entity.Expense.fields.1.commands.0',
        message: 'command "AproveExpense" does not exist',
        hint: 'did you mean "ApproveExpense"?',
      },
      {
        at: 'app.toml:9:15',
        code: 'PROTECTED_FIELD_MUTATION',
        path: 'command.ApproveExpense.mutations.status',
        message: 'field "status" may be written only by AproveExpense',
        hint: 'add "ApproveExpense" to the field\'s commands list',
      },
    ],
  },
  {
    fixture: 'command-without-effect',
    expected: [
      {
        at: 'app.toml:7:10',
        code: 'COMMAND_WITHOUT_EFFECT',
        path: 'command.ApproveExpense',
        message: 'command "ApproveExpense" has neither mutations nor a handler',
        hint: 'add mutations = { field = value } or handler = "./handlers/file.ts#name"',
      },
    ],
  },
  {
    fixture: 'condition-shape',
    expected: [
      {
        at: 'app.toml:8:10',
        code: 'INVALID_CONDITION',
        path: 'entity.Expense.access.read.or',
        message: '"or" must be a non-empty array of conditions, got an empty array',
      },
      {
        at: 'app.toml:9:12',
        code: 'INVALID_CONDITION',
        path: 'entity.Expense.access.create."$user.role"',
        message: 'unknown reference "$user.role" (expected $currentUser.<key>)',
      },
      {
        at: 'app.toml:13:1',
        code: 'INVALID_VALUE',
        path: 'command.ApproveExpense.policy',
        message: 'must be a condition: true/false, a string or a table',
      },
    ],
  },
  {
    fixture: 'condition-unknown-actor-key',
    expected: [
      {
        at: 'app.toml:8:26',
        code: 'UNKNOWN_ACTOR_KEY',
        path: 'entity.Ticket.access.read',
        message: 'the actor has no "rols"',
        hint: 'did you mean "roles"?',
      },
      {
        at: 'app.toml:8:85',
        code: 'UNKNOWN_ACTOR_KEY',
        path: 'entity.Ticket.access.update.ownerId',
        message: 'the actor has no "idd"',
        hint: 'did you mean "id"?',
      },
      {
        at: 'app.toml:8:118',
        code: 'UNKNOWN_ACTOR_KEY',
        path: 'entity.Ticket.access.delete."$currentUser.rol"',
        message: 'the actor has no "rol"',
        hint: 'did you mean "role"?',
      },
      {
        at: 'app.toml:12:41',
        code: 'UNKNOWN_ACTOR_KEY',
        path: 'command.Close.policy',
        message: 'the actor has no "emial"',
        hint: 'did you mean "email"?',
      },
      {
        at: 'app.toml:13:33',
        code: 'UNKNOWN_ACTOR_KEY',
        path: 'command.Close.mutations.closedBy',
        message: 'actor.nam is not part of the actor',
        // `actor.name` is no key of the actor: its metadata holds a person's name.
        hint: 'did you mean "metadata.name"?',
      },
      {
        at: 'app.toml:16:88',
        code: 'UNKNOWN_ACTOR_KEY',
        path: 'auth.permissions.agent.allow.0.condition',
        message: 'the actor has no "ide"',
        hint: 'did you mean "id"?',
      },
    ],
  },
  {
    fixture: 'condition-unknown-field',
    expected: [
      {
        at: 'app.toml:16:61',
        code: 'UNKNOWN_FIELD',
        path: 'entity.Ticket.fields.4.access.read',
        message: 'entity "Ticket" has no field "stauts"',
        hint: 'did you mean "status"?',
      },
      {
        at: 'app.toml:20:10',
        code: 'UNKNOWN_FIELD',
        path: 'entity.Ticket.access.read.stauts',
        message: 'entity "Ticket" has no field "stauts"',
        hint: 'did you mean "status"?',
      },
      {
        at: 'app.toml:21:24',
        code: 'UNKNOWN_FIELD',
        path: 'entity.Ticket.access.create',
        message: '"title" is a Text field: it has no "length"',
      },
      {
        at: 'app.toml:22:18',
        code: 'UNKNOWN_FIELD',
        path: 'entity.Ticket.access.update',
        message: '"customer" is a relation of Ticket; only a command\'s policy and availableWhen load relations',
      },
      {
        at: 'app.toml:26:27',
        code: 'UNKNOWN_FIELD',
        path: 'command.Close.policy',
        message: 'entity "Customer" has no field "nmae"',
        hint: 'did you mean "name"?',
      },
      {
        at: 'app.toml:27:43',
        code: 'UNKNOWN_FIELD',
        path: 'command.Close.availableWhen."costumer.name"',
        message: 'entity "Ticket" has no field "costumer"',
        hint: 'did you mean "customer"?',
      },
    ],
  },
  {
    fixture: 'condition-unknown-input',
    expected: [
      {
        at: 'app.toml:11:17',
        code: 'UNKNOWN_INPUT',
        path: 'command.Resolve.policy',
        message: 'command "Resolve" has no input "resolutoin"',
        hint: 'did you mean "resolution"?',
      },
      {
        at: 'app.toml:12:35',
        code: 'UNKNOWN_INPUT',
        path: 'command.Resolve.mutations.resolution',
        message: 'mutation reads input.resolutoin, which the command does not declare',
        hint: 'did you mean "resolution"?',
      },
      {
        at: 'app.toml:16:24',
        code: 'UNKNOWN_INPUT',
        path: 'command.Reopen.availableWhen',
        message: 'command "Reopen" has no input "reason"',
        hint: 'the command declares no input',
      },
    ],
  },
  {
    fixture: 'duplicate-definition',
    expected: [
      {
        at: 'entities.toml:4:9',
        code: 'DUPLICATE_DEFINITION',
        path: 'entity.Expense',
        message:
          `entity "Expense" is defined in ${shown('duplicate-definition/app.toml')} and ` +
          `${shown('duplicate-definition/entities.toml')}`,
        hint: `first defined at ${shown('duplicate-definition/app.toml')}:3`,
      },
    ],
  },
  {
    fixture: 'enum-without-values',
    expected: [
      {
        at: 'app.toml:4:3',
        code: 'ENUM_WITHOUT_VALUES',
        path: 'entity.Expense.fields.1',
        message: 'Enum field "status" has no values',
        hint: 'add values = ["a", "b"]',
      },
    ],
  },
  {
    fixture: 'expression-positions',
    expected: [
      {
        at: 'app.toml:8:46',
        code: 'INVALID_CONDITION',
        path: 'entity.Ticket.access.read',
        message: 'expression does not parse: expected expression after "&&" but found "=="',
      },
      {
        at: 'app.toml:9:33',
        code: 'INVALID_CONDITION',
        path: 'entity.Ticket.access.create',
        message: 'expression does not parse: unexpected character "&" (use "&&")',
      },
      {
        at: 'app.toml:13:5',
        code: 'INVALID_CONDITION',
        path: 'entity.Ticket.access.update',
        message: 'expression does not parse: expected expression after "contains" but found "=="',
      },
      {
        at: 'app.toml:17:4',
        code: 'INVALID_CONDITION',
        path: 'entity.Ticket.access.delete',
        message:
          'expression does not parse: unexpected character "$" (in expressions the current user is "actor", ' +
          'e.g. actor.id)',
      },
    ],
  },
  {
    fixture: 'expression-syntax',
    expected: [
      {
        at: 'app.toml:9:44',
        code: 'INVALID_CONDITION',
        path: 'command.ApproveExpense.policy',
        message: 'expression does not parse: expected expression after "&&"',
      },
    ],
  },
  {
    fixture: 'expression-unknown-root',
    expected: [
      {
        at: 'app.toml:9:18',
        code: 'INVALID_CONDITION',
        path: 'command.ApproveExpense.availableWhen',
        message:
          'expression does not parse: unknown root "recrod" (expected one of actor, record, input, workflow, now)',
        hint: 'did you mean "record"?',
      },
    ],
  },
  {
    fixture: 'file-option-on-non-file',
    expected: [
      {
        at: 'app.toml:4:38',
        code: 'FILE_OPTION_ON_NON_FILE',
        path: 'entity.Expense.fields.1.max',
        message: '"max" applies only to file fields, not Text',
      },
    ],
  },
  {
    fixture: 'handler-export-missing',
    expected: [
      {
        at: 'approve.toml:4:1',
        code: 'HANDLER_EXPORT_MISSING',
        path: 'command.ApproveExpense.handler',
        message: `${shown('handler-export-missing/commands/handlers/approve.ts')} has no export "approveExpense"`,
        hint: 'it exports approve, reject',
      },
      {
        at: 'approve.toml:8:1',
        code: 'HANDLER_EXPORT_MISSING',
        path: 'command.RejectExpense.handler',
        message: `${shown('handler-export-missing/commands/handlers/approve.ts')} has no default export`,
        hint: 'it exports approve, reject',
      },
    ],
  },
  {
    fixture: 'handler-malformed',
    expected: [
      {
        at: 'app.toml:6:1',
        code: 'INVALID_HANDLER',
        path: 'command.ApproveExpense.handler',
        message: 'handler "#approve" is not "path/to/module.ts" or "path/to/module.ts#exportName"',
        hint: 'e.g. handler = "./handlers/tickets.ts#closeTicket"',
      },
    ],
  },
  {
    fixture: 'handler-not-found',
    expected: [
      {
        at: 'app.toml:6:1',
        code: 'HANDLER_NOT_FOUND',
        path: 'command.ApproveExpense.handler',
        message: `handler file ${shown('handler-not-found/handlers/aprove.ts')} does not exist`,
        hint: 'handler paths are relative to the TOML file that declares the command',
      },
    ],
  },
  {
    fixture: 'handler-outside-root',
    root: 'app/app.toml',
    expected: [
      {
        at: 'app.toml:6:1',
        code: 'HANDLER_OUTSIDE_ROOT',
        path: 'command.ApproveExpense.handler',
        message:
          `handler "../handlers/approve.ts#approve" leaves the blueprint's root folder ` +
          `${shown('handler-outside-root/app')}`,
        hint: 'keep handler modules in the folder of the root blueprint or below it',
      },
    ],
  },
  {
    fixture: 'handler-unreadable',
    expected: [
      {
        at: 'app.toml:6:1',
        code: 'HANDLER_UNREADABLE',
        path: 'command.ApproveExpense.handler',
        message:
          `handler ${shown('handler-unreadable/handlers/approve.ts')} does not parse: ` +
          'Unexpected "export" (line 4)',
      },
    ],
  },
  {
    fixture: 'import-cycle',
    expected: [
      {
        at: 'entities.toml:1:12',
        code: 'IMPORT_CYCLE',
        path: 'imports.0',
        message:
          `import cycle: ${shown('import-cycle/app.toml')} -> ${shown('import-cycle/entities.toml')} -> ` +
          `${shown('import-cycle/app.toml')}`,
        hint: 'a fragment may not import, directly or indirectly, a file that imports it',
      },
    ],
  },
  {
    fixture: 'import-missing',
    expected: [
      {
        at: 'app.toml:1:31',
        code: 'IMPORT_NOT_FOUND',
        path: 'imports.1',
        message: 'imported file "./missing.toml" does not exist',
        hint: `looked for ${shown('import-missing/missing.toml')}; import paths are relative to the importing file`,
      },
    ],
  },
  {
    fixture: 'import-not-a-path',
    expected: [
      {
        at: 'app.toml:1:31',
        code: 'INVALID_IMPORTS',
        path: 'imports.1',
        message: 'each import must be a file path, got a number',
        hint: 'write imports = ["./entities.toml"]',
      },
    ],
  },
  {
    fixture: 'import-outside-root',
    root: 'app/app.toml',
    expected: [
      {
        at: 'app.toml:1:12',
        code: 'IMPORT_OUTSIDE_ROOT',
        path: 'imports.0',
        message: `import "../shared.toml" leaves the blueprint's root folder ${shown('import-outside-root/app')}`,
        hint: 'keep every fragment in the folder of the root blueprint or below it',
      },
    ],
  },
  {
    fixture: 'invalid-default',
    expected: [
      {
        at: 'app.toml:4:40',
        code: 'INVALID_DEFAULT',
        path: 'entity.Expense.fields.1.default',
        message: 'default "ten" does not fit Integer: expected an integer',
      },
      {
        at: 'app.toml:5:39',
        code: 'INVALID_DEFAULT',
        path: 'entity.Expense.fields.2.default',
        message: 'default 3000000000 does not fit Integer: expected an integer from -2147483648 to 2147483647',
      },
      {
        at: 'app.toml:6:38',
        code: 'INVALID_DEFAULT',
        path: 'entity.Expense.fields.3.default',
        message:
          'default "9999-12-31T23:00:00-02:00" does not fit DateTime: ' +
          'expected a date-time from year 0001 to 9999 (in UTC)',
      },
    ],
  },
  {
    fixture: 'invalid-mime-type',
    expected: [
      {
        at: 'app.toml:4:61',
        code: 'INVALID_MIME_TYPE',
        path: 'entity.Expense.fields.1.accept.1',
        message: 'accept entry ".pdf" is not a MIME type',
        hint: 'accept lists MIME types such as "application/pdf", not file extensions',
      },
    ],
  },
  {
    fixture: 'layout-not-rendered',
    expected: [
      {
        at: 'app.toml:14:1',
        code: 'LAYOUT_NOT_RENDERED',
        path: 'page."/notes".layout',
        message: 'page "/notes" has layout "kanban", which bp does not render',
        hint:
          'use one of list, detail, form, dashboard, board, auth, ' +
          'or give the page its own [page."/notes".template]',
      },
      {
        at: 'app.toml:20:1',
        code: 'LAYOUT_NOT_RENDERED',
        path: 'page."/signin".layout',
        message: 'page "/signin" has layout "auth", a sign-in page, but nobody signs in',
        hint: 'add providers = ["email"] to [auth], or another layout',
      },
      {
        at: 'app.toml:23:7',
        code: 'PAGE_NOT_SERVED',
        severity: 'warning',
        path: 'page."/empty"',
        message: 'page "/empty" is not served, a list page without a query has nothing to show',
        hint: 'add [page."/empty".query.<name>] with the entity it shows',
      },
    ],
  },
  {
    fixture: 'missing-primary-key',
    expected: [
      {
        at: 'app.toml:2:1',
        code: 'MISSING_PRIMARY_KEY',
        path: 'entity.Expense.fields',
        message: 'entity "Expense" has no primary key',
        hint: 'add { name = "id", type = "ULID", primary_key = true }',
      },
    ],
  },
  {
    fixture: 'mutation-unknown-field',
    expected: [
      {
        at: 'app.toml:9:15',
        code: 'UNKNOWN_FIELD',
        path: 'command.ApproveExpense.mutations.state',
        message: 'entity "Expense" has no field "state"',
      },
    ],
  },
  {
    fixture: 'mutation-wrong-type',
    expected: [
      {
        at: 'app.toml:10:15',
        code: 'INVALID_MUTATION',
        path: 'command.ApproveExpense.mutations.status',
        message: '"aproved" does not fit Enum field "status": expected one of "draft", "approved"',
      },
      {
        at: 'app.toml:10:35',
        code: 'INVALID_MUTATION',
        path: 'command.ApproveExpense.mutations.amount',
        message: '"0" does not fit Integer field "amount": expected an integer',
      },
    ],
  },
  {
    fixture: 'no-cascade-field-type',
    expected: [
      {
        at: 'app.toml:12:22',
        code: 'UNKNOWN_FIELD_TYPE',
        path: 'entity.Ticket.fields.1.type',
        message: 'unknown field type "Txt"',
        hint: 'did you mean "Text"?',
      },
    ],
  },
  {
    fixture: 'no-cascade-others',
    expected: [
      {
        at: 'app.toml:9:9',
        code: 'INVALID_NAME',
        path: 'entity."Line Item"',
        message: 'entity name "Line Item" must start with a letter and use only letters, digits and _',
      },
      {
        at: 'app.toml:10:26',
        code: 'UNKNOWN_FIELD_TYPE',
        path: 'entity."Line Item".fields.0.type',
        message: 'unknown field type "Ulid"',
        hint: 'did you mean "ULID"?',
      },
      {
        at: 'app.toml:11:42',
        code: 'INVALID_CONDITION',
        path: 'entity."Line Item".access.create',
        message: 'expression does not parse: expected expression after "contains"',
      },
      {
        at: 'app.toml:17:40',
        code: 'UNKNOWN_ENTITY',
        path: 'entity.Order.fields.2.ref',
        message: 'Ref target entity "Custmer" does not exist',
        hint: 'did you mean "Customer"?',
      },
      {
        at: 'app.toml:33:22',
        code: 'UNKNOWN_FIELD_TYPE',
        path: 'command.Reject.input.reason.type',
        message: 'unknown input type "Txt"',
        hint: 'did you mean "Text"?',
      },
    ],
  },
  {
    fixture: 'not-generated',
    expected: [
      {
        at: 'app.toml:10:70',
        code: 'NOT_GENERATED',
        severity: 'warning',
        path: 'notifications.adapters.1.type',
        message:
          'notification adapter "team" of type "pagerduty" is not built in: register its sender in src/extend.ts ' +
          '(notifications.team), or notify steps through it fail',
      },
      {
        at: 'app.toml:17:74',
        code: 'NOT_GENERATED',
        severity: 'warning',
        path: 'skill.tickets.actions.3.workflow',
        message:
          'skill action "audit" starts workflow "Audit", which its entity event starts, not a caller: ' +
          "the action's route is not served",
      },
      {
        at: 'app.toml:22:68',
        code: 'NOT_GENERATED',
        severity: 'warning',
        path: 'workflow.Log.steps.1',
        message:
          'plugin steps run the action src/extend.ts registers (plugins.crm.log); ' +
          'without it a job of "Log" fails at this step',
      },
      {
        at: 'app.toml:31:10',
        code: 'NOT_GENERATED',
        severity: 'warning',
        path: 'service.billing',
        message:
          'service "billing" runs the operations src/extend.ts implements (services.billing.<operation>); ' +
          'without them the service steps calling them fail',
      },
    ],
  },
  {
    fixture: 'odd-shapes',
    expected: [
      {
        at: 'app.toml:2:12',
        code: 'INVALID_IMPORTS',
        path: 'imports.0',
        message: 'each import must be a file path, got a number',
        hint: 'write imports = ["./entities.toml"]',
      },
      {
        at: 'app.toml:4:1',
        code: 'INVALID_VALUE',
        path: 'entity.Broken',
        message: 'must be a table',
      },
      {
        at: 'app.toml:7:1',
        code: 'INVALID_VALUE',
        path: 'entity.Expense.fields',
        message: 'must be a list',
      },
      {
        at: 'app.toml:11:10',
        code: 'INVALID_VALUE',
        path: 'workflow.Notify.steps.0',
        message: 'must be a table',
      },
      {
        at: 'app.toml:11:13',
        code: 'INVALID_VALUE',
        path: 'workflow.Notify.steps.1',
        message: 'must be a table',
      },
      {
        at: 'app.toml:11:20',
        code: 'MISSING_KEY',
        path: 'workflow.Notify.steps.2.url',
        message: 'a webhook step needs url',
      },
      {
        at: 'app.toml:13:10',
        code: 'MISSING_KEY',
        path: 'command.Approve.entity',
        message: '"entity" is required',
      },
      {
        at: 'app.toml:14:1',
        code: 'INVALID_VALUE',
        path: 'command.Approve.mutations',
        message: 'must be a table',
      },
    ],
  },
  {
    fixture: 'open-signup',
    expected: [
      {
        at: 'app.toml:4:2',
        code: 'OPEN_SIGNUP',
        severity: 'warning',
        path: 'auth',
        message:
          'anyone may sign up, and a new account (no roles) may write Note (create, update, delete), ' +
          'Ticket (create, update)',
        hint: 'set auth.signup = false and add people with the users command, or require a role in these rules',
      },
    ],
  },
  {
    fixture: 'open-signup-actions',
    expected: [
      {
        at: 'app.toml:6:2',
        code: 'OPEN_SIGNUP',
        severity: 'warning',
        path: 'auth',
        message:
          'anyone may sign up, and a new account (no roles) may write Draft (delete); ' +
          'call skill actions out.send (external), out.discard (destructive); ' +
          'run commands Touch (Draft); start workflows SendOut (by out.send)',
        hint: 'set auth.signup = false and add people with the users command, or require a role in these rules',
      },
      {
        at: 'app.toml:31:1',
        code: 'OPEN_SIGNUP_RISK',
        severity: 'warning',
        path: 'skill.out.actions.0',
        message:
          'anyone who signs up (no roles) may call out.send, which reaches outside the app (risk "external"): ' +
          'its scopes hold API keys, not people',
        hint:
          'set auth.signup = false and add people with the users command: ' +
          'a workflow action admits every signed-in person',
      },
      {
        at: 'app.toml:41:1',
        code: 'OPEN_SIGNUP_RISK',
        severity: 'warning',
        path: 'skill.out.actions.1',
        message:
          'anyone who signs up (no roles) may call out.discard, which destroys data (risk "destructive"): ' +
          'its scopes hold API keys, not people',
        hint: "set auth.signup = false, or require a role in Draft's access rule for delete",
      },
    ],
  },
  {
    fixture: 'operation-id-collision',
    expected: [
      {
        at: 'app.toml:12:10',
        code: 'OPERATION_ID_COLLISION',
        path: 'command.Approve_Expense',
        message: 'commands "ApproveExpense" and "Approve_Expense" share the operation id "approve_expense"',
        hint: 'an operation id is the snake_case form of the command name; rename one of them',
      },
    ],
  },
  {
    fixture: 'page-query-duplicate',
    expected: [
      {
        at: 'app.toml:14:27',
        code: 'DUPLICATE_DEFINITION',
        path: 'page."/expenses".queries.expenses',
        message: 'page "/expenses" defines query "expenses" twice, as query.expenses and queries.expenses',
        hint: 'queries.<name> is another spelling of query.<name>; keep one',
      },
    ],
  },
  {
    fixture: 'page-query-unknown-entity',
    expected: [
      {
        at: 'app.toml:12:1',
        code: 'UNKNOWN_ENTITY',
        path: 'page."/expenses".query.expenses.entity',
        message: 'entity "Expenses" does not exist',
        hint: 'did you mean "Expense"?',
      },
      {
        at: 'app.toml:19:1',
        code: 'UNKNOWN_ENTITY',
        path: 'page."/expenses/:id".query.expense.entity',
        message: 'entity "Expence" does not exist',
        hint: 'did you mean "Expense"?',
      },
    ],
  },
  {
    // The malformed first entry must not shift the position of the ones after it.
    fixture: 'permission-unknown-entity',
    expected: [
      {
        at: 'app.toml:5:22',
        code: 'INVALID_PERMISSION',
        path: 'auth.permissions.manager.allow.0',
        message: '"Expense" is not an Entity.action pattern',
        hint: 'write e.g. "Ticket.read" or "*.*"',
      },
      {
        at: 'app.toml:5:33',
        code: 'UNKNOWN_ENTITY',
        path: 'auth.permissions.manager.allow.1',
        message: 'entity "Expnse" does not exist',
        hint: 'did you mean "Expense"?',
      },
      {
        at: 'app.toml:5:50',
        code: 'INVALID_PERMISSION',
        path: 'auth.permissions.manager.allow.2',
        message: '"approve" is not an entity action (read, create, update, delete or *)',
      },
    ],
  },
  {
    fixture: 'permission-wildcard-field',
    expected: [
      {
        at: 'app.toml:15:53',
        code: 'UNKNOWN_FIELD',
        path: 'auth.permissions.member.allow.1.condition.ownerid',
        message: 'no entity has a field "ownerid"',
        hint: 'did you mean "ownerId"?',
      },
    ],
  },
  {
    fixture: 'primary-key-type',
    expected: [
      {
        at: 'app.toml:3:18',
        code: 'INVALID_PRIMARY_KEY',
        path: 'entity.Expense.fields.0.type',
        message: 'primary key "id" must be ULID, UUID, Text or Integer, not Float',
      },
    ],
  },
  {
    fixture: 'protection-unknown-field',
    expected: [
      {
        at: 'app.toml:8:25',
        code: 'UNKNOWN_FIELD',
        path: 'entity.Expense.protection.fields.1',
        message: 'entity "Expense" has no field "approvedAt"',
        hint: 'did you mean "approvedBy"?',
      },
    ],
  },
  {
    fixture: 'ref-malformed',
    expected: [
      {
        at: 'app.toml:4:40',
        code: 'INVALID_REF',
        path: 'entity.Expense.fields.1.ref',
        message: 'ref "Employee.id.name" of field "employeeId" is not "Entity" or "Entity.field"',
        hint: 'e.g. ref = "Customer" or ref = "Customer.id"',
      },
    ],
  },
  {
    fixture: 'ref-missing-entity',
    expected: [
      {
        at: 'app.toml:4:40',
        code: 'UNKNOWN_ENTITY',
        path: 'entity.Expense.fields.1.ref',
        message: 'Ref target entity "Employe" does not exist',
        hint: 'did you mean "Employee"?',
      },
    ],
  },
  {
    fixture: 'ref-missing-field',
    expected: [
      {
        at: 'app.toml:4:40',
        code: 'UNKNOWN_FIELD',
        path: 'entity.Expense.fields.1.ref',
        message: 'entity "Employee" has no field "uid"',
        hint: 'did you mean "id"?',
      },
    ],
  },
  {
    fixture: 'relation-missing-entity',
    expected: [
      {
        at: 'app.toml:8:34',
        code: 'UNKNOWN_ENTITY',
        path: 'entity.Expense.relations.employee.entity',
        message: 'entity "Employe" does not exist',
        hint: 'did you mean "Employee"?',
      },
    ],
  },
  {
    fixture: 'relation-missing-field',
    expected: [
      {
        at: 'app.toml:11:52',
        code: 'UNKNOWN_FIELD',
        path: 'entity.Employee.relations.expenses.foreign_key',
        message: 'entity "Expense" has no field "employeId"',
        hint: 'did you mean "employeeId"?',
      },
    ],
  },
  {
    fixture: 'several-errors',
    expected: [
      {
        at: 'app.toml:7:38',
        code: 'INVALID_DEFAULT',
        path: 'entity.Expense.fields.1.default',
        message: 'default "zero" does not fit Float: expected a number',
      },
      {
        at: 'app.toml:9:3',
        code: 'ENUM_WITHOUT_VALUES',
        path: 'entity.Expense.fields.3',
        message: 'Enum field "kind" has no values',
        hint: 'add values = ["a", "b"]',
      },
      {
        at: 'app.toml:15:20',
        code: 'UNKNOWN_FIELD_TYPE',
        path: 'entity.Employee.fields.1.type',
        message: 'unknown field type "Txt"',
        hint: 'did you mean "Text"?',
      },
      {
        at: 'commands.toml:3:31',
        code: 'INVALID_CONDITION',
        path: 'command.ApproveExpense.policy',
        message: 'expression does not parse: expected expression after "contains"',
      },
      {
        at: 'commands.toml:4:36',
        code: 'UNKNOWN_FIELD',
        path: 'command.ApproveExpense.mutations.approvedAt',
        message: 'entity "Expense" has no field "approvedAt"',
      },
    ],
  },
  {
    fixture: 'skill-action-both',
    expected: [
      {
        at: 'app.toml:13:1',
        code: 'INVALID_SKILL_ACTION',
        path: 'skill.expenses.actions.0',
        message: 'skill action "escalate" has both action and workflow',
        hint: 'an action either runs a CRUD operation or starts a workflow; keep one of the two',
      },
    ],
  },
  {
    fixture: 'skill-map-params-unknown-field',
    expected: [
      {
        at: 'app.toml:15:15',
        code: 'UNKNOWN_FIELD',
        path: 'skill.expenses.actions.0.mapParams.expenseId',
        message: 'entity "Expense" has no field "uid"',
        hint: 'did you mean "id"?',
      },
    ],
  },
  {
    fixture: 'skill-missing-path-param',
    expected: [
      {
        at: 'app.toml:12:1',
        code: 'MISSING_PATH_PARAM',
        path: 'skill.expenses.actions.0.path',
        message: 'a "delete" skill action needs a {param} in its path to find the record',
        hint: 'e.g. path = "/api/skills/expenses/{id}"',
      },
    ],
  },
  {
    fixture: 'skill-path-param',
    expected: [
      {
        at: 'app.toml:12:1',
        code: 'UNKNOWN_PATH_PARAM',
        path: 'skill.expenses.actions.0.path',
        message: 'path parameter {expenseId} is not a field of entity "Expense" and has no mapParams entry',
        hint: 'map it to a field: mapParams = { expenseId = "id" }',
      },
      {
        at: 'app.toml:15:15',
        code: 'UNKNOWN_PATH_PARAM',
        path: 'skill.expenses.actions.0.mapParams.expenseID',
        message: 'mapParams names {expenseID}, which is not a parameter of /api/skills/expenses/{expenseId}',
        hint: 'did you mean "expenseId"?',
      },
    ],
  },
  {
    fixture: 'skill-unknown-entity',
    expected: [
      {
        at: 'app.toml:13:1',
        code: 'UNKNOWN_ENTITY',
        path: 'skill.expenses.actions.0.entity',
        message: 'entity "Expenses" does not exist',
        hint: 'did you mean "Expense"?',
      },
    ],
  },
  {
    fixture: 'skill-unknown-workflow',
    expected: [
      {
        at: 'app.toml:18:1',
        code: 'UNKNOWN_WORKFLOW',
        path: 'skill.expenses.actions.0.workflow',
        message: 'workflow "Escalte" does not exist',
        hint: 'did you mean "Escalate"?',
      },
    ],
  },
  {
    fixture: 'toml-syntax',
    expected: [
      {
        at: 'app.toml:3:32',
        code: 'TOML_SYNTAX',
        path: '',
        message: 'TOML syntax error: expected comma or end of structure',
      },
    ],
  },
  {
    fixture: 'toml-syntax-in-import',
    expected: [
      {
        at: 'entities.toml:8:22',
        code: 'TOML_SYNTAX',
        path: '',
        message: 'TOML syntax error: control characters are not allowed in strings',
      },
    ],
  },
  {
    fixture: 'unknown-field-type',
    expected: [
      {
        at: 'app.toml:5:22',
        code: 'UNKNOWN_FIELD_TYPE',
        path: 'entity.Expense.fields.2.type',
        message: 'unknown field type "Integr"',
        hint: 'did you mean "Integer"?',
      },
    ],
  },
  {
    fixture: 'unknown-key',
    expected: [
      {
        at: 'app.toml:3:1',
        code: 'UNKNOWN_KEY',
        severity: 'warning',
        path: 'project.verison',
        message: 'unknown key "verison" is ignored',
        hint: 'did you mean "version"?',
      },
      {
        at: 'app.toml:8:36',
        code: 'UNKNOWN_KEY',
        severity: 'warning',
        path: 'entity.Expense.fields.1.requird',
        message: 'unknown key "requird" is ignored',
        hint: 'did you mean "required"?',
      },
      {
        at: 'app.toml:11:17',
        code: 'UNKNOWN_KEY',
        severity: 'warning',
        path: 'entity.Expense.acess',
        message: 'unknown key "acess" is ignored',
        hint: 'did you mean "access"?',
      },
      {
        at: 'app.toml:14:2',
        code: 'UNKNOWN_KEY',
        severity: 'warning',
        path: 'entitys',
        message: 'unknown top-level key "entitys" is ignored',
        hint: 'did you mean "entity"?',
      },
    ],
  },
  {
    fixture: 'unscoped-write',
    expected: [
      {
        at: 'app.toml:4:1',
        code: 'UNSCOPED_WRITE',
        severity: 'warning',
        path: 'auth.apiKeys.0',
        message:
          'API key "triage" has scopes, but may write Comment (create, update, delete), ' +
          'Tag (create, update, delete), which declare no scopes.write: its scopes do not limit these writes',
        hint: 'require a scope for writing, e.g. scopes = { write = ["tickets.write"] } on these entities',
      },
      {
        at: 'app.toml:11:1',
        code: 'UNSCOPED_WRITE',
        severity: 'warning',
        path: 'auth.apiKeys.1',
        message:
          'API key "reporter" has scopes, but may write Comment (create, update, delete), ' +
          'which declare no scopes.write: its scopes do not limit these writes',
        hint: 'require a scope for writing, e.g. scopes = { write = ["tickets.write"] } on these entities',
      },
    ],
  },
  {
    fixture: 'webhook-duplicate-route',
    expected: [
      {
        at: 'app.toml:10:13',
        code: 'DUPLICATE_ROUTE',
        path: 'workflow.Mirror.trigger.webhook',
        message: 'POST /webhooks/in is also the route of the webhook of workflow Inbound',
      },
      {
        at: 'app.toml:16:1',
        code: 'DUPLICATE_ROUTE',
        path: 'skill.tickets.actions.0.path',
        message: 'POST /webhooks/in is also the route of the webhook of workflow Inbound',
      },
    ],
  },
  {
    fixture: 'workflow-operators',
    expected: [
      {
        at: 'app.toml:7:83',
        code: 'INVALID_CONDITION',
        path: 'workflow.Watch.trigger.condition."after.status"."$nq"',
        message: '"$nq" is not an operator of a workflow condition',
        hint:
          'an operator table holds only $eq, $ne, $gt, $gte, $lt, $lte; ' +
          'to compare with a table, write one without $ keys',
      },
      {
        at: 'app.toml:10:71',
        code: 'INVALID_CONDITION',
        path: 'workflow.Watch.steps.0.if."$and".0."trigger.after.status"."$gtt"',
        message: '"$gtt" is not an operator of a workflow condition',
        hint:
          'an operator table holds only $eq, $ne, $gt, $gte, $lt, $lte; ' +
          'to compare with a table, write one without $ keys',
      },
    ],
  },
  {
    fixture: 'workflow-unknown-adapter',
    expected: [
      {
        at: 'app.toml:19:22',
        code: 'UNKNOWN_ADAPTER',
        path: 'workflow.Announce.steps.1.adapter',
        message: 'notification adapter "consle" is not declared',
        hint: 'did you mean "console"?',
      },
    ],
  },
  {
    fixture: 'workflow-unknown-command',
    expected: [
      {
        at: 'app.toml:14:30',
        code: 'UNKNOWN_COMMAND',
        path: 'workflow.AutoApprove.steps.0.command',
        message: 'command "ApproveExpence" does not exist',
        hint: 'did you mean "ApproveExpense"?',
      },
    ],
  },
  {
    fixture: 'workflow-unknown-entity',
    expected: [
      {
        at: 'app.toml:9:13',
        code: 'UNKNOWN_ENTITY',
        path: 'workflow.Archive.trigger.entity',
        message: 'entity "Expence" does not exist',
        hint: 'did you mean "Expense"?',
      },
      {
        at: 'app.toml:11:21',
        code: 'UNKNOWN_ENTITY',
        path: 'workflow.Archive.steps.0.entity',
        message: 'entity "Expenses" does not exist',
        hint: 'did you mean "Expense"?',
      },
    ],
  },
  {
    fixture: 'workflow-unknown-field',
    expected: [
      {
        at: 'app.toml:11:120',
        code: 'UNKNOWN_FIELD',
        path: 'workflow.Archive.steps.0.data.state',
        message: 'entity "Expense" has no field "state"',
      },
    ],
  },
];

describe('validateBlueprint', () => {
  it('accepts the reference blueprint, warning of open sign-up, unscoped writes and what is not generated yet', () => {
    const { diagnostics, model } = validate(path.join(REPO, 'fixtures/helpdesk/helpdesk.toml'));
    const warning = (at: string, code: string, keyPath: string, message: string, hint?: string): Expected => ({
      at: `helpdesk.toml:${at}`,
      code,
      severity: 'warning',
      path: keyPath,
      message,
      hint,
    });
    const unscoped = (name: string, writes: string) =>
      `API key "${name}" has scopes, but may write ${writes}, which declare no scopes.write: ` +
      'its scopes do not limit these writes';
    const scopeHint = 'require a scope for writing, e.g. scopes = { write = ["tickets.write"] } on these entities';
    expect(diagnostics.map(seen)).to.deep.equal([
      warning(
        '11:2',
        'OPEN_SIGNUP',
        'auth',
        'anyone may sign up, and a new account (no roles) may write Comment (create, update, delete), ' +
          'Ticket (create); call skill actions triage.add_comment (write), triage.escalate_ticket (write); ' +
          'start workflows EscalateTicket (by triage.escalate_ticket)',
        'set auth.signup = false and add people with the users command, or require a role in these rules',
      ),
      warning(
        '15:1',
        'UNSCOPED_WRITE',
        'auth.apiKeys.0',
        unscoped('triage', 'Comment (create, update, delete), Customer (create, update), Ticket (create, update)'),
        scopeHint,
      ),
      warning(
        '24:1',
        'UNSCOPED_WRITE',
        'auth.apiKeys.1',
        unscoped('reporter', 'Comment (create, update, delete), Ticket (create)'),
        scopeHint,
      ),
    ]);
    expect(model?.entities.map((e) => e.name)).to.deep.equal(['Comment', 'Customer', 'Ticket']);
  });

  it('has a case for every fixture folder', () => {
    expect(CASES.map((c) => c.fixture)).to.deep.equal(fs.readdirSync(INVALID).sort());
  });

  describe('reports, with exact code, path, message, hint and position', () => {
    for (const { fixture, root = 'app.toml', expected } of CASES) {
      it(fixture, () => {
        const { diagnostics } = validate(path.join(INVALID, fixture, root));
        const full = expected.map((e) => ({ severity: 'error', hint: undefined, ...e }));
        const context = CONTEXT_WARNINGS.filter((code) => !expected.some((e) => e.code === code));
        const compared = diagnostics.filter((d) => !context.includes(d.code));
        expect(compared.map(seen)).to.deep.equal(full);
      });
    }
  });

  describe('the array forms and the queries alias', () => {
    /** Handler files are absolute paths, so the two fixtures differ there and nowhere else. */
    function modelOf(dir: string): Blueprint {
      const { model, diagnostics } = validate(path.join(VALID, dir, 'app.toml'));
      expect(diagnostics.filter((d) => d.severity === 'error').map(seen)).to.deep.equal([]);
      for (const c of model!.commands)
        if (c.handler) c.handler.file = path.relative(path.join(VALID, dir), c.handler.file);
      return model!;
    }

    it('build the same model as the keyed forms', () => {
      const keyed = modelOf('keyed');
      expect(modelOf('array-forms')).to.deep.equal(keyed);
      expect(keyed.pages.map((p) => p.queries.map((q) => q.name))).to.deep.equal([['expenses'], ['expense'], []]);
    });
  });

  it('accepts presentational sections and page keys with one warning each, whatever they hold', () => {
    const { diagnostics: all } = validate(path.join(VALID, 'presentational', 'app.toml'));
    const diagnostics = all.filter((d) => d.code !== 'PUBLIC_ENTITY');
    const ignored = (at: string, key: string, keyPath = key): Expected => ({
      at,
      code: 'IGNORED_KEY',
      severity: 'warning',
      path: keyPath,
      message: `"${key}" is presentational and is ignored`,
      hint: undefined,
    });
    expect(diagnostics.map(seen)).to.deep.equal([
      ignored('app.toml:6:2', 'ui'),
      ignored('app.toml:10:2', 'ux'),
      ignored('app.toml:14:2', 'design_adapter'),
      ignored('app.toml:17:2', 'design_system'),
      ignored('app.toml:29:1', 'meta', 'page."/expenses".meta'),
      ignored('app.toml:30:1', 'ux', 'page."/expenses".ux'),
    ]);
  });

  describe('OPEN_SIGNUP', () => {
    /** The open-signup fixture's entities, with [auth] as given. */
    const withAuth = (auth: string) =>
      fs
        .readFileSync(path.join(INVALID, 'open-signup', 'app.toml'), 'utf8')
        .replace('[auth]\nproviders = ["email"]', auth);
    const codes = (text: string) =>
      validateText(text).map((d) => `${d.location?.line}:${d.location?.column} ${d.path} ${d.code}`);

    it('is reported at auth.signup when the blueprint writes signup = true', () => {
      expect(codes(withAuth('[auth]\nproviders = ["email"]\nsignup = true'))).to.deep.equal([
        '6:1 auth.signup OPEN_SIGNUP',
      ]);
    });

    it('is silent with signup = false, without the email provider, and with [auth.permissions]', () => {
      expect(codes(withAuth('[auth]\nproviders = ["email"]\nsignup = false'))).to.deep.equal([]);
      expect(codes(withAuth('[auth]\nproviders = []'))).to.deep.equal([]);
      const permissions = '[auth]\nproviders = ["email"]\n[auth.permissions.staff]\nallow = ["*.*"]';
      expect(codes(withAuth(permissions))).to.deep.equal([]);
    });

    it('is silent when every write needs a role', () => {
      const text = [
        '[auth]',
        'providers = ["email"]',
        '[entity.Invoice]',
        'fields = [{ name = "id", type = "ULID", primary_key = true }, { name = "ownerId", type = "Text" }]',
        '[entity.Invoice.access]',
        'create = "actor.roles contains \'billing\' && record.ownerId == actor.id"',
        'update = { "$currentUser.role" = "billing", ownerId = "$currentUser.id" }',
        'delete = { or = [{ "$currentUser.role" = "admin" }, "actor.role == \'billing\'"] }',
      ].join('\n');
      expect(codes(text)).to.deep.equal([]);
      // The same rules without the role checks let a new account act on its own records.
      const open = text
        .replace("actor.roles contains 'billing' && ", '')
        .replace('"$currentUser.role" = "billing", ', '');
      expect(codes(open)).to.deep.equal(['1:2 auth OPEN_SIGNUP']);
    });
  });

  describe('on arbitrary shapes', () => {
    /** Known keys make the generated values reach the checks behind the shape check. */
    const KEYS = [
      'name',
      'type',
      'fields',
      'primary_key',
      'values',
      'default',
      'ref',
      'max',
      'accept',
      'commands',
      'write',
      'access',
      'relations',
      'protection',
      'entity',
      'foreign_key',
      'through',
      'mutations',
      'handler',
      'policy',
      'availableWhen',
      'input',
      'actions',
      'method',
      'path',
      'action',
      'workflow',
      'mapParams',
      'body',
      'trigger',
      'steps',
      'manual',
      'event',
      'webhook',
      'command',
      'adapter',
      'adapters',
      'query',
      'queries',
      'where',
      'data',
      'orderBy',
      'include',
      'form',
      'read',
      'create',
      'or',
      'and',
      'allow',
      'deny',
      'apiKeys',
      'permissions',
      'statusField',
      'actionBar',
      'indexes',
      'unique',
      'operations',
      'result',
      'items',
      'then',
      'else',
      'do',
      'if',
      'service',
      'operation',
      'schedule',
      'risk',
      'board',
      'widget',
      'lookup',
      'optionsFrom',
      'card',
      'columns',
      'groupBy',
      'search',
      'pages',
      'runtime',
      'min_version',
      'enabled',
      'href',
      'redirect',
      'onSuccess',
      'layout',
      'pattern',
      'payload',
      'message',
      'on_move',
      'layoutSlots',
      'behavior',
    ];
    const leaf = fc.oneof(
      fc.constantFrom(
        'ULID',
        'Text',
        'Enum',
        'Ref',
        'file',
        'X',
        'X.id',
        'now',
        'input.a',
        'actor.id',
        'record.a',
        'a == 1',
        '/x/{id}',
        'h.ts#f',
        'command-only',
        'belongsTo',
        'query',
        'notify',
        'condition',
        'loop',
        'service',
        'webhook',
        'email',
        'lookup',
        'select',
        'board',
        'Object',
        'Array',
        'GET',
        'read',
        '0 0 * * *',
        '[a-',
        '0.7.0',
      ),
      fc.string({ maxLength: 6 }),
      fc.integer(),
      fc.boolean(),
    );
    const { value } = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 4 })), tie('value'), { maxKeys: 4 }),
      ),
    }));
    const section = fc.oneof(fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: 6 }), value);
    const named = fc.dictionary(fc.constantFrom('X', 'Y', '/p'), section, { maxKeys: 2 });
    const blueprint = fc.record(
      {
        imports: value,
        project: section,
        entity: named,
        entities: fc.array(section, { maxLength: 2 }),
        command: named,
        service: named,
        services: fc.oneof(named, fc.array(section, { maxLength: 2 })),
        plugin: named,
        plugins: fc.array(section, { maxLength: 2 }),
        skill: named,
        workflow: named,
        page: named,
        pages: fc.array(section, { maxLength: 2 }),
        auth: section,
        notifications: section,
      },
      { requiredKeys: [] },
    );

    const HANDLER = fs.readFileSync(path.join(VALID, 'keyed', 'handlers', 'pay.ts'), 'utf8');
    /** The blueprint and the keyed fixture's handler; nothing else exists. */
    const memoryHost = (text: string): SourceHost => {
      const files = new Map([
        ['/bp/app.toml', text],
        ['/bp/handlers/pay.ts', HANDLER],
      ]);
      return {
        readFile: (p) => files.get(p),
        realPath: (p) => (files.has(p) || p === '/bp' || p === '/bp/handlers' ? p : undefined),
        display: (p) => path.basename(p),
      };
    };

    function expectLocatedDiagnostics(data: Record<string, unknown>): void {
      let text: string;
      try {
        text = stringify(data);
      } catch {
        return;
      }
      const { diagnostics } = validateBlueprint('/bp/app.toml', memoryHost(text));
      for (const d of diagnostics) {
        expect(d.location, `${d.code} ${d.path}`).to.include({ file: 'app.toml' });
        expect(d.message).to.be.a('string').and.not.equal('');
      }
    }

    it('never throws, and locates every diagnostic', () => {
      fc.assert(fc.property(blueprint, expectLocatedDiagnostics), { numRuns: 1000 });
    });

    it('never throws on a valid blueprint with a few values replaced or removed', () => {
      const base = parseToml(fs.readFileSync(path.join(VALID, 'keyed', 'app.toml'), 'utf8'));
      const paths: Array<Array<string | number>> = [];
      const walk = (v: unknown, at: Array<string | number>): void => {
        if (at.length) paths.push(at);
        if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...at, i]));
        else if (typeof v === 'object' && v !== null && !(v instanceof Date))
          for (const [k, x] of Object.entries(v)) walk(x, [...at, k]);
      };
      walk(base, []);
      const edits = fc.array(fc.tuple(fc.nat({ max: paths.length - 1 }), fc.option(value, { nil: undefined })), {
        minLength: 1,
        maxLength: 3,
      });
      fc.assert(
        fc.property(edits, (changes) => {
          const data = structuredClone(base) as Record<string, unknown>;
          for (const [index, replacement] of changes) {
            const at = paths[index];
            let parent: unknown = data;
            for (const key of at.slice(0, -1))
              parent =
                typeof parent === 'object' && parent !== null ? (parent as Record<string, unknown>)[key] : undefined;
            if (typeof parent !== 'object' || parent === null) continue;
            const key = at[at.length - 1];
            if (replacement !== undefined) (parent as Record<string | number, unknown>)[key] = replacement;
            else if (Array.isArray(parent)) parent.splice(Number(key), 1);
            else delete (parent as Record<string, unknown>)[key];
          }
          expectLocatedDiagnostics(data);
        }),
        { numRuns: 1000 },
      );
    });
  });
});

describe('docs/diagnostics.md', () => {
  const docs = fs.readFileSync(path.join(REPO, 'docs/diagnostics.md'), 'utf8');
  const documented = new Set([...docs.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]));

  /** Codes as the generator writes them: `report('CODE'` and `code: ... 'CODE' ...`. */
  function emittedCodes(): Set<string> {
    const codes = new Set<string>();
    const dir = path.join(REPO, 'generator');
    for (const rel of fs.readdirSync(dir, { recursive: true }) as string[]) {
      if (!rel.endsWith('.ts')) continue;
      const source = fs.readFileSync(path.join(dir, rel), 'utf8');
      for (const m of source.matchAll(/report\(\s*'([A-Z][A-Z0-9_]+)'/g)) codes.add(m[1]);
      for (const m of source.matchAll(/\bcode: ([^,\n]+)/g)) {
        for (const literal of m[1].matchAll(/'([A-Z][A-Z0-9_]+)'/g)) codes.add(literal[1]);
      }
    }
    return codes;
  }

  it('documents every diagnostic code the generator reports', () => {
    const missing = [...emittedCodes()].filter((c) => !documented.has(c)).sort();
    expect(missing, 'codes missing from docs/diagnostics.md').to.deep.equal([]);
  });

  it('documents no code the generator does not report', () => {
    const emitted = emittedCodes();
    expect([...documented].filter((c) => !emitted.has(c)).sort(), 'stale rows in docs/diagnostics.md').to.deep.equal(
      [],
    );
  });
});
