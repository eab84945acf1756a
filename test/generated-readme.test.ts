// The generated README tells a team what it needs to run, configure, extend, build and deploy the
// app: every environment variable (each API key's by name, with the key's name, roles and scopes),
// which handler each command runs, the extension point, and what of the blueprint is not served yet.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { validateBlueprint } from '../generator/compile.ts';
import { expressPath, pageServed } from '../generator/model/pages.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { bp, freshDir, ROOT } from './support/apps.ts';

for (const fixture of ['helpdesk', 'catalog']) {
  describe(`the generated README (${fixture})`, function () {
    this.timeout(60_000);
    const blueprint = path.join(ROOT, 'fixtures', fixture, `${fixture}.toml`);
    const model = validateBlueprint(blueprint, nodeSourceHost()).model;
    if (!model) throw new Error(`${fixture} does not validate`);
    const emailAuth = model.auth.providers.includes('email');
    let out: string;
    let readme: string;
    let sections: Map<string, string>;

    before(() => {
      out = path.join(freshDir(`readme-${fixture}`), 'app');
      expect(bp(['generate', blueprint, '-o', out]).status).to.equal(0);
      readme = fs.readFileSync(path.join(out, 'README.md'), 'utf8');
      sections = new Map(
        readme
          .split(/^## /m)
          .slice(1)
          .map((s) => [s.slice(0, s.indexOf('\n')), s]),
      );
    });

    it('keeps every line within 120 characters', () => {
      expect(readme.split('\n').filter((line) => line.length > 120)).to.deep.equal([]);
    });

    it("documents every environment variable, each API key's by name with its key", () => {
      const config = sections.get('Configuration') ?? '';
      for (const name of ['PORT', 'DATABASE_URL', 'DATABASE_SYNC', 'NODE_ENV'])
        expect(config).to.contain(`| \`${name}\` |`);
      expect(config).to.contain('`normal` or `full`');
      expect(config.includes('| `SESSION_SECRET` |')).to.equal(emailAuth);
      expect(model.auth.apiKeys).not.to.have.length(0);
      for (const key of model.auth.apiKeys) {
        const entry = config
          .slice(config.indexOf(`- \`${key.keyEnv}\`: `))
          .split(/\n(?=- |\n)/)[0]
          .replace(/\s+/g, ' ');
        expect(entry, key.keyEnv).to.contain(`the key of \`${key.name}\``);
        expect(entry).to.contain(`roles: ${key.roles.map((r) => `\`${r}\``).join(', ')};`);
        expect(entry).to.contain(`scopes: ${key.scopes.map((s) => `\`${s}\``).join(', ')}.`);
      }
    });

    it('names the handler file and export of every command', () => {
      const commands = (sections.get('Commands and their handlers') ?? '').replace(/\n {2}/g, ' ');
      expect(model.commands).not.to.have.length(0);
      for (const command of model.commands) {
        const line = commands
          .split('\n')
          .find((l) => l.startsWith(`- \`${command.name}\` (\`POST /api/commands/${command.operationId}/:id\`)`));
        expect(line, command.name).to.be.a('string');
        if (command.handler) {
          const file = path.relative(out, command.handler.file).split(path.sep).join('/');
          expect(line).to.contain(`export \`${command.handler.exportName}\` of \`${file}\``);
          expect(fs.existsSync(path.resolve(out, file)), file).to.equal(true);
        } else {
          expect(line).to.contain('no handler');
        }
      }
    });

    it('documents the extension point, the build and the deployment', () => {
      const extending = sections.get('Extending the app') ?? '';
      for (const key of ['`middleware`', '`routes(router, { db, events })`', '`services`', '`delegate(req, actor)`'])
        expect(extending).to.contain(key);
      expect(extending).to.contain('before credentials are checked');
      const deploy = sections.get('Build and deploy') ?? '';
      for (const text of [
        'npm ci --omit=dev',
        'npm run build',
        'npm start',
        '`GET /healthz`',
        '`GET /readyz`',
        'dist/build.json',
      ])
        expect(deploy).to.contain(text);
      expect(deploy).to.contain(emailAuth ? 'dist/server.js, dist/users.js' : 'dist/server.js with');
    });

    it('lists, by name, what of the blueprint it does not serve yet', () => {
      const names = [
        ...model.skills.flatMap((s) =>
          s.actions
            .filter((a) => model.workflows.some((w) => w.name === a.workflow && w.trigger.kind !== 'manual'))
            .map((a) => `${s.name}.${a.name}`),
        ),
        ...model.pages.filter((p) => !pageServed(p)).map((p) => p.route),
        ...model.notifications.adapters.filter((a) => a.type !== 'console').map((a) => a.name),
      ];
      const section = sections.get('Not served yet');
      if (!names.length) return expect(section).to.equal(undefined);
      for (const name of names) expect(section, name).to.contain(`\`${name}\``);
    });

    it('lists each page it serves, and says what / serves', () => {
      const served = model.pages.filter(pageServed);
      for (const p of served) expect(readme, p.route).to.contain(`- \`${expressPath(p.route)}\`: `);
      const index = "`/` is the app's index page";
      if (served.some((p) => p.route === '/')) expect(readme).not.to.contain(index);
      else expect(readme).to.contain(index);
    });

    it('lists each served skill action under Skills, with its method, path and scopes', () => {
      const jobs = new Set(model.workflows.filter((w) => w.trigger.kind === 'manual').map((w) => w.name));
      const served = model.skills.flatMap((s) =>
        s.actions
          .filter((a) => (a.action && !a.workflow) || (a.workflow && jobs.has(a.workflow)))
          .map((a) => ({ s, a })),
      );
      const section = sections.get('Skills');
      if (!served.length) return expect(section).to.equal(undefined);
      for (const { s, a } of served) {
        expect(section).to.contain(`\`${a.method} ${a.route}\` (\`${s.name}.${a.name}\`)`);
        for (const scope of a.scopes) expect(section).to.contain(`\`${scope}\``);
      }
    });
  });
}
