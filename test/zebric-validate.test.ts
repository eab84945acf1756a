// Rules of the Zebric 0.6 grammar bp checks: one fixture per rule under
// test/fixtures/zebric/invalid/, each with its exact diagnostics (code, path, message, hint,
// position). NOT_GENERATED warnings are compared only where a case expects one. Also: cron
// expressions one by one, and top-level keys that are names of Object.prototype.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { validateBlueprint } from '../generator/compile.ts';
import type { Diagnostic } from '../generator/diagnostics.ts';
import { nodeSourceHost, type SourceHost } from '../generator/source.ts';
import { cronProblem } from '../generator/validate/declarations/cron.ts';

const INVALID = path.join(import.meta.dirname, 'fixtures', 'zebric', 'invalid');

interface Expected {
  at: string;
  severity: 'error' | 'warning';
  code: string;
  path: string;
  message: string;
  hint?: string;
}

const error = (at: string, code: string, keyPath: string, message: string, hint?: string): Expected => ({
  at,
  severity: 'error',
  code,
  path: keyPath,
  message,
  hint,
});
const warning = (at: string, code: string, keyPath: string, message: string, hint?: string): Expected => ({
  at,
  severity: 'warning',
  code,
  path: keyPath,
  message,
  hint,
});

const seen = (d: Diagnostic): Expected => ({
  at: d.location ? `${d.location.line}:${d.location.column}` : '(no location)',
  severity: d.severity,
  code: d.code,
  path: d.path,
  message: d.message,
  hint: d.hint,
});

const SCHEDULE_HINT =
  'five fields (minute hour day-of-month month day-of-week), six with seconds first, ' +
  'or @hourly, @daily, @weekly, @monthly, @yearly';

const CASES: Record<string, Expected[]> = {
  'auth-providers': [
    warning(
      '10:23',
      'NOT_GENERATED',
      'auth.providers.1',
      'auth provider "github" is accepted but not generated yet: only "email" signs people in',
    ),
    error(
      '12:22',
      'TEMPLATE_NOT_FOUND',
      'auth.pages.signIn.source',
      'template file test/fixtures/zebric/invalid/auth-providers/sign-in.liquid does not exist',
      'template paths are relative to the TOML file that declares them; an inline template needs type = "inline"',
    ),
  ],
  'board-missing': [
    error(
      '9:7',
      'MISSING_KEY',
      'page."/board".board',
      'page "/board" has layout = "board" but no board',
      'add [page."/board".board] with query, groupBy, columns and card',
    ),
  ],
  'board-references': [
    error('28:1', 'UNKNOWN_FIELD', 'page."/board".board.groupBy', 'entity "Card" has no field "colum"'),
    error(
      '30:42',
      'UNKNOWN_FIELD',
      'page."/board".board.card.fields.0',
      'entity "Column" has no field "nme"',
      'did you mean "name"?',
    ),
    error(
      '30:56',
      'UNKNOWN_RELATION',
      'page."/board".board.card.fields.1',
      'entity "Card" has no relation "colmn"',
      'did you mean "column"?',
    ),
    error(
      '30:70',
      'UNKNOWN_FIELD',
      'page."/board".board.card.fields.2',
      'entity "Card" has no field "titl"',
      'did you mean "title"?',
    ),
    error('31:10', 'UNKNOWN_WORKFLOW', 'page."/board".board.move.workflow', 'workflow "Move" does not exist'),
    error(
      '34:1',
      'UNKNOWN_QUERY',
      'page."/other".board.query',
      'page "/other" has no query "crads"',
      'declare it under [page."<path>".query.<name>]',
    ),
  ],
  'form-pattern': [
    error(
      '14:44',
      'INVALID_PATTERN',
      'page."/tasks/new".form.fields.0.pattern',
      'pattern of field "title" is not a regular expression: Unterminated character class',
    ),
  ],
  'lookup-without-block': [
    error(
      '14:11',
      'MISSING_KEY',
      'page."/tasks/new".form.fields.0.lookup',
      'lookup field "title" needs a lookup block',
      'add lookup = { entity = "Customer", search = ["name"] }',
    ),
  ],
  'nested-steps': [
    error(
      '13:23',
      'UNKNOWN_ENTITY',
      'workflow.W.steps.0.then.0.entity',
      'entity "Tsk" does not exist',
      'did you mean "Task"?',
    ),
    error(
      '16:114',
      'UNKNOWN_FIELD',
      'workflow.W.steps.0.else.0.do.0.data.stauts',
      'entity "Task" has no field "stauts"',
      'did you mean "status"?',
    ),
    error(
      '17:27',
      'UNKNOWN_COMMAND',
      'workflow.W.steps.0.else.0.do.1.command',
      'command "Clos" does not exist',
      'did you mean "Close"?',
    ),
  ],
  'options-from': [
    error(
      '18:38',
      'OPTION_NOT_APPLICABLE',
      'page."/tasks/new".form.fields.0.optionsFrom',
      '"optionsFrom" applies only to select fields, not radio',
    ),
    error(
      '19:54',
      'UNKNOWN_QUERY',
      'page."/tasks/new".form.fields.1.optionsFrom.query',
      'page "/tasks/new" has no query "taks"',
      'did you mean "tasks"?',
    ),
    error(
      '20:72',
      'UNKNOWN_FIELD',
      'page."/tasks/new".form.fields.2.optionsFrom.value',
      'entity "Task" has no field "uid"',
      'did you mean "id"?',
    ),
    error(
      '20:87',
      'UNKNOWN_FIELD',
      'page."/tasks/new".form.fields.2.optionsFrom.label',
      'entity "Task" has no field "titel"',
      'did you mean "title"?',
    ),
  ],
  'page-keys': [
    warning(
      '11:17',
      'UNKNOWN_KEY',
      'page."/tasks/:id".layoutSlots."detail.mian"',
      'unknown key "detail.mian" is ignored',
      'did you mean "detail.main"?',
    ),
    warning(
      '12:45',
      'UNKNOWN_KEY',
      'page."/tasks/:id".widget.groupBy',
      'unknown key "groupBy" is ignored',
      'did you mean "group_by"?',
    ),
    warning('13:38', 'UNKNOWN_KEY', 'page."/tasks/:id".behavior.onclick', 'unknown key "onclick" is ignored'),
    warning(
      '14:15',
      'UNKNOWN_KEY',
      'page."/tasks/:id".actionBar.statusFeld',
      'unknown key "statusFeld" is ignored',
      'did you mean "statusField"?',
    ),
    warning(
      '14:65',
      'UNKNOWN_KEY',
      'page."/tasks/:id".actionBar.actions.0.hreff',
      'unknown key "hreff" is ignored',
      'did you mean "href"?',
    ),
  ],
  'plugin-shape': [
    error('9:1', 'MISSING_KEY', 'plugin."@acme/plugin".enabled', '"enabled" is required'),
    error(
      '11:28',
      'INVALID_VALUE',
      'plugin."@acme/plugin".capabilities.1',
      'must be one of "database", "network", "storage", "filesystem"',
    ),
  ],
  'route-links': [
    error('12:22', 'UNKNOWN_ROUTE', 'page."/tasks/:id".actionBar.actions.0.href', 'no page serves "/board"'),
    error('14:21', 'UNKNOWN_ROUTE', 'page."/tasks/:id".actionBar.actions.2.href', 'no page serves "/tasks/{id}/edit"'),
    error(
      '14:48',
      'UNKNOWN_ROUTE',
      'page."/tasks/:id".actionBar.actions.2.redirect',
      'no page serves "/taks/{id}"',
      'did you mean "/tasks/:id"?',
    ),
    error('27:41', 'UNKNOWN_ROUTE', 'page."/tasks/new/more".form.onSuccess.redirect', 'no page serves "/task"'),
  ],
  'runtime-version': [
    warning(
      '4:13',
      'RUNTIME_VERSION',
      'project.runtime.min_version',
      'the blueprint asks for Zebric 0.7.0 or later; bp follows the 0.6 grammar',
      'keys added after 0.6 are reported as unknown; lower min_version if the blueprint uses none',
    ),
  ],
  schedule: [
    error(
      '10:13',
      'INVALID_SCHEDULE',
      'workflow.A.trigger.schedule',
      'schedule "0 25 * * *" is not a cron expression: hour "25" is not a number from 0 to 23',
      SCHEDULE_HINT,
    ),
    error(
      '14:13',
      'INVALID_SCHEDULE',
      'workflow.B.trigger.schedule',
      'schedule "every day" is not a cron expression: it has 2 field(s), not 5 or 6',
      SCHEDULE_HINT,
    ),
    error(
      '18:13',
      'INVALID_SCHEDULE',
      'workflow.C.trigger.schedule',
      'schedule "*/0 * * * *" is not a cron expression: minute "*/0" has a step that is not a positive number',
      SCHEDULE_HINT,
    ),
    error(
      '22:13',
      'INVALID_SCHEDULE',
      'workflow.D.trigger.schedule',
      'schedule "@fortnightly" is not a cron expression: unknown macro "@fortnightly"',
      SCHEDULE_HINT,
    ),
    error(
      '26:13',
      'INVALID_SCHEDULE',
      'workflow.E.trigger.schedule',
      'schedule "0 9 * * FRI-MON" is not a cron expression: day of week range "FRI-MON" runs backwards',
      SCHEDULE_HINT,
    ),
    error(
      '34:1',
      'INVALID_TRIGGER',
      'workflow.Both.trigger',
      'a trigger is exactly one of { manual = true }, { entity, event }, ' +
        '{ webhook = "/webhooks/..." } or { schedule = "<cron>" }',
    ),
  ],
  'service-step': [
    error(
      '15:23',
      'UNKNOWN_SERVICE',
      'workflow.W.steps.0.service',
      'service "mailr" is not declared',
      'did you mean "mailer"?',
    ),
    error(
      '16:43',
      'UNKNOWN_SERVICE',
      'workflow.W.steps.1.operation',
      'service "mailer" has no operation "sned"',
      'did you mean "send"?',
    ),
  ],
  'service-values': [
    error(
      '10:18',
      'UNKNOWN_FIELD_TYPE',
      'service.mailer.operations.send.input.to.type',
      'unknown value type "Emial"',
      'did you mean "Email"?',
    ),
    error('10:36', 'MISSING_KEY', 'service.mailer.operations.send.input.tags.items', 'an Array value needs items'),
    error(
      '10:136',
      'UNKNOWN_FIELD_TYPE',
      'service.mailer.operations.send.input.meta.fields.inner.items.type',
      'unknown value type "Bool"',
      'value types: ULID, UUID, Text, LongText, Email, Integer, Float, Boolean, ' +
        'Date, DateTime, JSON, Enum, Ref, Object, Array',
    ),
    error('11:1', 'MISSING_KEY', 'service.mailer.operations.send.result.fields', 'an Object value needs fields'),
    error('14:1', 'INVALID_VALUE', 'service.empty.operations', 'must not be empty'),
  ],
  'skill-query': [
    // A query parameter on a missing field leaves its action out (a warning); a type that does not exist is an error.
    warning(
      '15:36',
      'SKILL_ACTION_NOT_SERVED',
      'skill.tasks.actions.0.query.state.field',
      'entity "Task" has no field "stauts", so skill action "list" is left out',
      'did you mean "status"?',
    ),
    error(
      '15:85',
      'UNKNOWN_FIELD_TYPE',
      'skill.tasks.actions.0.query.title.type',
      'unknown type "Strng" for query parameter "title"',
      'types: ULID, UUID, Text, LongText, Email, Integer, Float, Boolean, Date, DateTime, JSON, Enum, Ref',
    ),
    warning(
      '15:103',
      'SKILL_ACTION_NOT_SERVED',
      'skill.tasks.actions.0.query.titel',
      'entity "Task" has no field "titel", so skill action "list" is left out',
      'did you mean "title"?',
    ),
  ],
  'skill-risk': [
    error(
      '11:98',
      'INVALID_RISK',
      'skill.tasks.actions.0.risk',
      'a GET skill action reads, so its risk is "read", not "write"',
      'write risk = "read", or leave it out',
    ),
    error(
      '12:110',
      'INVALID_RISK',
      'skill.tasks.actions.1.risk',
      'a DELETE skill action changes data, so its risk cannot be "read"',
      'write risk = "write", "destructive" or "external", or leave it out',
    ),
  ],
  'step-keys': [
    error('17:3', 'MISSING_KEY', 'workflow.W.steps.0.url', 'a webhook step needs url'),
    warning('17:23', 'UNKNOWN_KEY', 'workflow.W.steps.0.ur', 'unknown key "ur" is ignored', 'did you mean "url"?'),
    warning('18:35', 'UNKNOWN_KEY', 'workflow.W.steps.1.url', '"url" is not a key of a notify step and is ignored'),
    error(
      '19:5',
      'INVALID_VALUE',
      'workflow.W.steps.2.type',
      'must be one of "query", "command", "notify", "webhook", "email", ' +
        '"plugin", "service", "condition", "loop", "delay"',
      'did you mean "notify"?',
    ),
    error('20:61', 'MISSING_KEY', 'workflow.W.steps.3.then.0.duration', 'a delay step needs duration'),
    warning(
      '20:79',
      'UNKNOWN_KEY',
      'workflow.W.steps.3.then.0.duraton',
      'unknown key "duraton" is ignored',
      'did you mean "duration"?',
    ),
  ],
  'step-required': [
    error('16:3', 'MISSING_KEY', 'workflow.W.steps.0.subject', 'an email step needs subject'),
    error('17:3', 'MISSING_KEY', 'workflow.W.steps.1.do', 'a loop step needs do'),
    error('18:3', 'MISSING_KEY', 'workflow.W.steps.2.recordId', 'a command step needs recordId'),
    error(
      '19:35',
      'CONFLICTING_OPTIONS',
      'workflow.W.steps.3.message',
      'a notify step takes body or message, not both',
      'message is another spelling of body; keep one',
    ),
    error(
      '20:70',
      'CONFLICTING_OPTIONS',
      'workflow.W.steps.4.payload',
      'a webhook step takes body or payload, not both',
      'payload is another spelling of body; keep one',
    ),
    error(
      '21:21',
      'INVALID_VALUE',
      'workflow.W.steps.5.duration',
      'must be a number of milliseconds (0 or more) or a template string',
    ),
  ],
  'widget-references': [
    error(
      '15:28',
      'UNKNOWN_ENTITY',
      'page."/kanban".widget.entity',
      'entity "Tsk" does not exist',
      'did you mean "Task"?',
    ),
    error('15:68', 'UNKNOWN_FIELD', 'page."/kanban".widget.column_label', 'entity "Task" has no field "name"'),
    error(
      '15:138',
      'UNKNOWN_WORKFLOW',
      'page."/kanban".widget.on_move.workflow',
      'workflow "Tuch" does not exist',
      'did you mean "Touch"?',
    ),
    error(
      '19:12',
      'WIDGET_NOT_RENDERED',
      'page."/lookup".widget.kind',
      'bp renders widgets of kind "board" only, not "lookup"',
      'pick records with a form field of type "lookup", or show them on a list page',
    ),
    error(
      '19:56',
      'UNKNOWN_FIELD',
      'page."/lookup".widget.search.0',
      'entity "Task" has no field "titel"',
      'did you mean "title"?',
    ),
    error('19:66', 'UNKNOWN_FIELD', 'page."/lookup".widget.group_by', 'entity "Task" has no field "stat"'),
    error(
      '19:107',
      'UNKNOWN_FIELD',
      'page."/lookup".widget.card.toggles.0.field',
      'entity "Task" has no field "starred"',
    ),
  ],
};

/** Diagnostics of a one-file blueprint held in memory. */
function validateText(text: string): Diagnostic[] {
  const host: SourceHost = {
    readFile: (p) => (p === '/bp/app.toml' ? text : undefined),
    realPath: (p) => (p === '/bp/app.toml' || p === '/bp' ? p : undefined),
    display: (p) => path.basename(p),
  };
  return validateBlueprint('/bp/app.toml', host).diagnostics;
}

describe('Zebric 0.6 rules', () => {
  it('has a case for every fixture folder', () => {
    expect(Object.keys(CASES).sort()).to.deep.equal(fs.readdirSync(INVALID).sort());
  });

  for (const [fixture, expected] of Object.entries(CASES)) {
    it(fixture, () => {
      const { diagnostics } = validateBlueprint(path.join(INVALID, fixture, 'app.toml'), nodeSourceHost());
      // These fixtures have no [auth]: their entities' PUBLIC_ENTITY warnings are another test's subject;
      // so are the pages they leave without a query (PAGE_NOT_SERVED, test/validate.test.ts).
      const context = ['PUBLIC_ENTITY', 'COMMAND_WITHOUT_AUTH', 'PAGE_NOT_SERVED'];
      const relevant = diagnostics.filter((d) => !context.includes(d.code));
      const compared = expected.some((e) => e.code === 'NOT_GENERATED')
        ? relevant
        : relevant.filter((d) => d.code !== 'NOT_GENERATED');
      expect(compared.map(seen)).to.deep.equal(expected);
    });
  }

  it('reads services and plugins in every form, and a name given twice is one too many', () => {
    const operations = 'operations = { send = { result = { type = "Text" } } }';
    const text = [
      '[[services]]',
      'name = "mailer"',
      operations,
      '[[plugins]]',
      'name = "@acme/P"',
      'enabled = true',
      '[plugin.Other]',
      'enabled = true',
    ];
    // Enabled plugins name npm packages: these two names are not (capitals), in either form.
    expect(
      validateText(text.join('\n')).map((d) => `${d.location?.line}:${d.location?.column} ${d.code} ${d.path}`),
    ).to.deep.equal([
      '1:1 NOT_GENERATED service.mailer',
      '5:1 INVALID_NAME plugin."@acme/P".name',
      '7:9 INVALID_NAME plugin.Other.name',
    ]);
    const twice = validateText(['[service.mailer]', operations, '[services.mailer]', operations].join('\n'));
    expect(
      twice.map((d) => `${d.location?.line}:${d.location?.column} ${d.code} ${d.path} ${d.message}`),
    ).to.deep.equal([
      '1:10 NOT_GENERATED service.mailer service "mailer" runs the operations src/extend.ts implements ' +
        '(services.mailer.<operation>); without them the service steps calling them fail',
      '3:11 DUPLICATE_DEFINITION service.mailer service "mailer" is defined twice in app.toml',
    ]);
  });

  it('warns about a min_version that is not a version', () => {
    const diagnostics = validateText('[project]\nname = "X"\nruntime = { min_version = "latest" }\n');
    expect(diagnostics.map(seen)).to.deep.equal([
      warning(
        '3:13',
        'RUNTIME_VERSION',
        'project.runtime.min_version',
        'min_version "latest" is not a version (major.minor or major.minor.patch)',
        'e.g. min_version = "0.6.0"',
      ),
    ]);
    for (const ok of ['0.6.0', '0.5', '0.6.3-beta.1', 'v0.4.1']) {
      expect(validateText(`[project]\nname = "X"\nruntime = { min_version = "${ok}" }\n`), ok).to.deep.equal([]);
    }
  });

  it('reads top-level keys named like Object.prototype members as unknown keys', () => {
    // `constructor` once read as the array form of a section (ARRAY_FORMS inherits it).
    for (const key of ['constructor', 'toString', 'hasOwnProperty']) {
      expect(validateText(`${key} = [{ name = "x" }]\n`).map((d) => `${d.code} ${d.path} ${d.message}`)).to.deep.equal([
        `UNKNOWN_KEY ${key} unknown top-level key "${key}" is ignored`,
      ]);
    }
  });

  describe('cron expressions', () => {
    it('accepts five and six fields, names, ranges, steps, lists and macros', () => {
      for (const cron of [
        '* * * * *',
        '0 2 * * 1-5',
        '*/15 9-17 * * MON-FRI',
        '0 0 1,15 * ?',
        '30 0 9 1 JAN-JUN ?',
        '0 0 * * 7',
        '5-55/10 * * dec sun',
        ' @Daily ',
        '@hourly',
        '@annually',
      ]) {
        expect(cronProblem(cron), cron).to.equal(undefined);
      }
    });

    it('says which field is wrong and why', () => {
      expect(cronProblem('')).to.equal('it has 0 field(s), not 5 or 6');
      expect(cronProblem('* * * *')).to.equal('it has 4 field(s), not 5 or 6');
      expect(cronProblem('60 * * * *')).to.equal('minute "60" is not a number from 0 to 59');
      expect(cronProblem('0 0 0 * *')).to.equal('day of month "0" is not a number from 1 to 31');
      expect(cronProblem('0 0 * 13 *')).to.equal('month "13" is not a number from 1 to 12 or a name (JAN...)');
      expect(cronProblem('0 0 * * 8')).to.equal('day of week "8" is not a number from 0 to 7 or a name (SUN...)');
      expect(cronProblem('0 0 ? * *')).to.equal(undefined);
      expect(cronProblem('? 0 * * *')).to.equal('minute "?" is not a number from 0 to 59');
      expect(cronProblem('0 0 * * 5-1')).to.equal('day of week range "5-1" runs backwards');
      expect(cronProblem('1-2-3 * * * *')).to.equal('minute "1-2-3" is not a value, range or step');
      expect(cronProblem('*/2/3 * * * *')).to.equal('minute "*/2/3" is not a value, range or step');
      expect(cronProblem('0,,5 * * * *')).to.equal('minute "" is not a value, range or step');
      expect(cronProblem('*/x * * * *')).to.equal('minute "*/x" has a step that is not a positive number');
      expect(cronProblem('0 0 * * 1.5')).to.equal('day of week "1.5" is not a number from 0 to 7 or a name (SUN...)');
      expect(cronProblem('@reboot')).to.equal('unknown macro "@reboot"');
    });
  });
});
