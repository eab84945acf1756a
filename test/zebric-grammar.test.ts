// Zebric 0.6's grammar, kept three ways that must agree: test/fixtures/zebric/grammar-0.6.json
// (our transcription of its schema), docs/zebric-compatibility.md (one table per section, every
// key with what bp does) and the grammar fixture (a blueprint using every key). bp validates the
// fixture with nothing but the expected IGNORED_KEY and NOT_GENERATED warnings, generates it, and
// the app serves create, list, get and update on each of its entities over HTTP.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { parse as parseToml } from 'smol-toml';
import { validateBlueprint } from '../generator/compile.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { freshDir, freshKey, generate, ROOT, typecheck } from './support/apps.ts';
import {
  Api,
  bootInProcess,
  SessionClient,
  usersCli,
  type InProcessApp,
  type Rec,
} from './support/commands/harness.ts';

interface GrammarSection {
  name: string;
  at: string[];
  keys: string[];
}

const GRAMMAR = JSON.parse(fs.readFileSync(path.join(ROOT, 'test/fixtures/zebric/grammar-0.6.json'), 'utf8')) as {
  sections: GrammarSection[];
};
const FIXTURE = path.join(ROOT, 'test/fixtures/zebric/grammar');
const DOC = fs.readFileSync(path.join(ROOT, 'docs/zebric-compatibility.md'), 'utf8');

/** A grammar path (`entity.*.fields[].name`) as segments; `at` "" is the root. */
const segmentsOf = (at: string, key: string): string[] => [...(at === '' ? [] : at.split('.')), ...key.split('.')];

/** Zebric's TOML sugar: keyed and array forms of named sections, and the name each entry gets. */
const NAMED: Record<string, { kind: string; nameKey: string }> = {
  entity: { kind: 'entity', nameKey: 'name' },
  entities: { kind: 'entity', nameKey: 'name' },
  command: { kind: 'command', nameKey: 'name' },
  commands: { kind: 'command', nameKey: 'name' },
  service: { kind: 'service', nameKey: 'name' },
  services: { kind: 'service', nameKey: 'name' },
  plugin: { kind: 'plugin', nameKey: 'name' },
  plugins: { kind: 'plugin', nameKey: 'name' },
  skill: { kind: 'skill', nameKey: 'name' },
  skills: { kind: 'skill', nameKey: 'name' },
  workflow: { kind: 'workflow', nameKey: 'name' },
  workflows: { kind: 'workflow', nameKey: 'name' },
  page: { kind: 'page', nameKey: 'path' },
  pages: { kind: 'page', nameKey: 'path' },
};

const isTable = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/**
 * Every key path a TOML file writes, in the grammar's notation: a list element adds `[]` to its
 * key, a named entry becomes `<kind>.<name>` with its name key, a page's `queries` is `query`.
 * Written independently of bp's parser, so that it checks what the parser reads.
 */
function keyPaths(data: Record<string, unknown>): string[][] {
  const out: string[][] = [];
  const walk = (value: unknown, at: string[]): void => {
    out.push(at);
    if (Array.isArray(value)) {
      const element = [...at.slice(0, -1), `${at[at.length - 1]}[]`];
      for (const item of value) if (isTable(item) || Array.isArray(item)) walk(item, element);
    } else if (isTable(value)) {
      for (const [k, v] of Object.entries(value))
        walk(v, [...at, at.length === 2 && at[0] === 'page' && k === 'queries' ? 'query' : k]);
    }
  };
  for (const [key, value] of Object.entries(data)) {
    const named = NAMED[key];
    if (!named) {
      walk(value, [key]);
      continue;
    }
    const entries = Array.isArray(value)
      ? value.map((v) => [String((v as Rec)[named.nameKey]), v] as const)
      : Object.entries(value as Rec);
    out.push([named.kind]);
    for (const [name, entry] of entries) {
      out.push([named.kind, name, named.nameKey]);
      walk(entry, [named.kind, name]);
    }
  }
  return out;
}

const matches = (pattern: string[], written: string[]) =>
  pattern.length === written.length && pattern.every((p, i) => p === '*' || p === written[i]);

/** The table under `### <section>` in the compatibility document: its first column, as keys. */
function documentedKeys(section: string): string[] | undefined {
  const start = DOC.indexOf(`\n### ${section}\n`);
  if (start < 0) return undefined;
  const rest = DOC.slice(start + section.length + 6);
  const end = rest.search(/\n#{2,3} /);
  const body = end < 0 ? rest : rest.slice(0, end);
  return [...body.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
}

describe('Zebric 0.6 grammar', () => {
  it('is listed in full in docs/zebric-compatibility.md, one table per section', () => {
    for (const section of GRAMMAR.sections) {
      expect(documentedKeys(section.name), `### ${section.name}`).to.deep.equal(section.keys);
    }
  });

  it('is used in full by the grammar fixture, every key of every section', () => {
    const files = ['app.toml', 'services.toml'].map(
      (f) => parseToml(fs.readFileSync(path.join(FIXTURE, f), 'utf8')) as Rec,
    );
    const written = files.flatMap(keyPaths);
    const unused = GRAMMAR.sections.flatMap((s) =>
      s.keys
        .filter((key) => !s.at.some((at) => written.some((w) => matches(segmentsOf(at, key), w))))
        .map((key) => `${s.name}: ${key}`),
    );
    expect(unused).to.deep.equal([]);
  });

  describe('the grammar fixture', function () {
    this.timeout(180_000);
    const PASSWORD = 'a long enough password 1';
    const KEYS = {
      STUDIO_OPS_KEY: 'studio-ops-key-0123456789abcdef',
      STUDIO_REPORTER_KEY: 'studio-reporter-key-0123456789ab',
    };
    let appDir: string;
    let app: InProcessApp;
    let api: Api;

    before(async () => {
      appDir = path.join(freshDir('zebric-grammar'), 'app');
      await generate(path.join(FIXTURE, 'app.toml'), appDir);
      app = await bootInProcess(appDir, KEYS);
      api = new Api(() => app.url, appDir, KEYS.STUDIO_OPS_KEY);
    });
    after(async () => app?.close());

    it('validates with only the warnings for what bp ignores or does not generate yet', () => {
      const { diagnostics } = validateBlueprint(path.join(FIXTURE, 'app.toml'), nodeSourceHost());
      const seen = diagnostics.map((d) => `${d.severity} ${d.code} ${d.path}`);
      const notGenerated = (p: string) => `warning NOT_GENERATED ${p}`;
      const ignored = (p: string) => `warning IGNORED_KEY ${p}`;
      expect(seen).to.deep.equal([
        ignored('page."/".meta'),
        ignored('page."/board".ux'),
        // page."/tasks/:id" is served: its template renders it; page."/tasks/new" is a served form page,
        // whose file input on a Text field is left out.
        'warning FORM_FILE_NOT_STORED page."/tasks/new".form.fields.5.type',
        ignored('ui'),
        ignored('ux'),
        ignored('design_adapter'),
        ignored('design_system'),
        notGenerated('service.mailer'),
        notGenerated('service.crm'),
      ]);
    });

    it('typechecks in strict mode, its command handler included', () => {
      const r = typecheck(appDir);
      expect(r.stdout + r.stderr).to.equal('');
      expect(r.status).to.equal(0);
    });

    /** Create, list, get and update one record of `collection` with the ops key; returns it. */
    async function crud(collection: string, body: Rec, change: Rec): Promise<Rec> {
      const created = await api.create(collection, body);
      expect(created).to.deep.include(body);
      const list = await api.call('GET', `/api/${collection}`, `/api/${collection}`);
      expect(list.status, list.text).to.equal(200);
      expect((list.body as { items: Rec[] }).items.map((r) => r.id)).to.include(created.id);
      expect(await api.get(collection, String(created.id))).to.deep.equal(created);
      const updated = await api.call(
        'PUT',
        `/api/${collection}/{id}`,
        `/api/${collection}/${String(created.id)}`,
        change,
        { idem: freshKey() },
      );
      expect(updated.status, updated.text).to.equal(200);
      expect(updated.body).to.deep.include({ ...body, ...change, id: created.id });
      expect(await api.get(collection, String(created.id))).to.deep.equal(updated.body);
      return updated.body as Rec;
    }

    it('serves create, list, get and update on every entity, with its Refs', async () => {
      const team = await crud('teams', { name: 'Core', slug: 'core' }, { slug: 'core-team' });
      await crud('charters', { teamId: team.id, mission: 'Ship it' }, { mission: 'Ship it well' });
      const member = await crud(
        'members',
        { teamId: team.id, email: 'ada@studio.example.com', role: 'lead', joinedOn: '2024-02-29' },
        { bio: 'Leads' },
      );
      const column = await crud('columns', { name: 'Doing', position: 1 }, { position: 2 });
      const task = await crud(
        'tasks',
        {
          title: 'Draft the plan',
          columnId: column.id,
          assigneeId: member.id,
          points: 3,
          dueAt: '2024-03-01T09:00:00.000Z',
          details: { size: 'm' },
        },
        { status: 'done', starred: true },
      );
      const label = await crud('labels', { name: 'triage' }, { name: 'urgent' });
      await crud('tasklabels', { taskId: task.id, labelId: label.id }, { labelId: label.id });
      // A Ref to a record that does not exist is refused, and nothing is stored.
      const orphan = await api.call(
        'POST',
        '/api/tasks',
        '/api/tasks',
        { title: 'Lost', columnId: team.id },
        { idem: freshKey() },
      );
      expect(orphan.status, orphan.text).to.equal(422);
    });

    it('runs the command, its mutations and its handler in one write, for a signed-in admin', async () => {
      // The command asks API keys for a scope; people are not scoped.
      const added = usersCli(
        appDir,
        `file:${app.dbFile}`,
        ['add', '--email', 'lead@studio.example.com', '--role', 'admin'],
        `${PASSWORD}\n`,
      );
      expect(added.status, added.stderr).to.equal(0);
      const session = await SessionClient.login(app.url, 'lead@studio.example.com', PASSWORD);
      const task = await api.create('tasks', { title: 'Review me', status: 'done' });
      const res = await api.command(
        'review_task',
        String(task.id),
        { note: 'Looks right', verdict: 'changes' },
        { idem: freshKey(), session },
      );
      expect(res.status, res.text).to.equal(200);
      expect(await api.get('tasks', String(task.id))).to.deep.include({
        reviewedBy: session.actor.id,
        reviewNote: 'Looks right',
        details: { verdict: 'changes' },
      });
    });
  });
});
