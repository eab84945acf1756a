// Zebric 0.6 blueprints and identity (issue 9), on our own fixtures (test/fixtures/zebric/): an app
// without [auth] whose entities are public; people as the records of the blueprint's `User`
// entity; the actor's Zebric keys (effectiveId, type, metadata) in rules, policies and
// mutations; API keys with Zebric's defaults. Each fixture validates, generates, typechecks, boots
// (once on SQLite and once on PostgreSQL) and serves create / list / get / update on every entity
// over HTTP, every answer checked against its openapi.json.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { bp, freshDir, generate, request, ROOT, startApp, typecheck, type HttpResponse } from './support/apps.ts';
import {
  Api,
  type AppOnDatabase,
  bootOnDatabase,
  capturingConsoleError,
  errorOf,
  type Rec,
  SessionClient,
  usersCli,
} from './support/commands/harness.ts';
import { CookieClient } from './support/access/client.ts';
import { DATABASES, databaseUrl, type DatabaseKind } from './support/databases.ts';
import { listTree } from './support/goldens.ts';

const FIXTURES = path.join(ROOT, 'test/fixtures/zebric');
const PASSWORD = 'a long enough password';
/** PostgreSQL wants a SESSION_SECRET even in development: every instance must share it. */
const SESSION_SECRET = 'x'.repeat(40);

/** Generates a fixture's app into a fresh folder; the CLI's output (its warnings) is returned too. */
async function generated(name: string, database: DatabaseKind): Promise<{ appDir: string; output: string }> {
  const appDir = path.join(freshDir(`zebric-${name}-${database}`), 'app');
  const r = await generate(path.join(FIXTURES, name, 'app.toml'), appDir);
  return { appDir, output: r.stdout + r.stderr };
}

/** Signs up over JSON; the client keeps the session cookie and its CSRF token. */
async function signUp(base: string, body: Rec): Promise<{ res: HttpResponse; client: SessionClient }> {
  const res = await request(base, 'POST', '/api/auth/signup', { json: body });
  const client = new SessionClient();
  if (res.status === 201) {
    client.remember(res);
    client.csrfToken = (res.body as { csrfToken: string }).csrfToken;
    client.actor = (res.body as { actor: Rec }).actor;
  }
  return { res, client };
}

/** Typechecks the generated app and keeps every line of it within 120 characters. */
function expectCleanApp(appDir: string): void {
  const r = typecheck(appDir);
  expect(r.stdout + r.stderr).to.equal('');
  const long = listTree(appDir)
    .filter((f) => !f.startsWith('node_modules/') && !f.startsWith('data/'))
    .flatMap((f) =>
      fs
        .readFileSync(path.join(appDir, f), 'utf8')
        .split('\n')
        .flatMap((l, i) => (l.length > 120 ? [`${f}:${i + 1}`] : [])),
    );
  expect(long).to.deep.equal([]);
}

/** Starts another instance of the app on its database, unserved, and stops it: what it said while starting. */
async function startAnother(
  app: AppOnDatabase,
  env: Record<string, string>,
): Promise<{ warnings: string[]; errors: string[] }> {
  const { createApp } = await app.load<{ createApp: (o: Rec) => { close(): Promise<void> } }>('src/app.ts');
  const warnings: string[] = [];
  const { lines } = await capturingConsoleError(async () => {
    const instance = createApp({
      db: app.database,
      appDir: app.appDir,
      env,
      warn: (m: string) => void warnings.push(m),
    });
    await instance.close();
  });
  return { warnings, errors: lines };
}

describe('Zebric 0.6 identity', function () {
  this.timeout(120_000);

  for (const database of DATABASES)
    describe(`a blueprint without [auth] (no-auth, ${database})`, () => {
      let appDir: string;
      let output: string;
      let app: AppOnDatabase;
      let api: Api;
      const anonymous = { key: null, idem: undefined };

      before(async () => {
        ({ appDir, output } = await generated('no-auth', database));
        app = await bootOnDatabase(appDir, await databaseUrl(database, 'zebric_no_auth'), { SESSION_SECRET });
        api = new Api(() => app.url, appDir, null);
      });
      after(async () => app?.close());

      it('validates: a PUBLIC_ENTITY warning per public entity, naming its actions, and COMMAND_WITHOUT_AUTH', () => {
        const r = bp(['validate', path.join(FIXTURES, 'no-auth/app.toml')]);
        expect(r.status).to.equal(0);
        const lines = r.stderr.split('\n').filter((l) => l.includes('[warning'));
        expect(lines).to.have.length(3);
        expect(lines[0]).to.match(
          new RegExp(
            String.raw`entity\.Board: the blueprint has no \[auth\], ` +
              String.raw`so anyone may read, create, update and delete Board records \[warning PUBLIC_ENTITY\]$`,
          ),
        );
        // The written rules hold: nobody deletes an Entry.
        expect(lines[1]).to.match(
          /entity\.Entry: .* anyone may read, create and update Entry records \[warning PUBLIC_ENTITY\]$/,
        );
        expect(lines[2]).to.match(/command\.HideEntry: .*nobody can run HideEntry.* \[warning COMMAND_WITHOUT_AUTH\]$/);
        expect(output).to.contain('PUBLIC_ENTITY');
      });

      it('typechecks, with no line over 120 characters', () => expectCleanApp(appDir));

      it('lists the public entities when it starts, one warning each', async () => {
        expect(app.warnings.filter((w) => w.startsWith('public entity'))).to.deep.equal([
          'public entity Board (/api/boards): anyone may read, create, update, delete it (the blueprint has no [auth])',
          'public entity Entry (/api/entrys): anyone may read, create, update it (the blueprint has no [auth])',
        ]);
      });

      it('serves create, list, get and update to anonymous callers, with the rules and Refs it declares', async () => {
        const board = await api.create('boards', { title: 'Welcome' }, anonymous);
        const entry = await api.create('entrys', { boardId: board.id, message: 'hello' }, anonymous);
        const hidden = await api.create('entrys', { boardId: board.id, message: 'spam', hidden: true }, anonymous);
        const boards = await api.call('GET', '/api/boards', '/api/boards', undefined, anonymous);
        expect(boards.status).to.equal(200);
        expect((boards.body as { items: Rec[] }).items.map((b) => b.id)).to.include(board.id);
        expect(await api.get('boards', board.id as string, anonymous)).to.deep.equal(board);
        const entries = await api.call('GET', '/api/entrys', '/api/entrys', undefined, anonymous);
        const ids = (entries.body as { items: Rec[] }).items.map((e) => e.id);
        expect(ids).to.include(entry.id);
        expect(ids, 'the read rule still hides hidden entries').not.to.include(hidden.id);
        expect(
          (await api.call('GET', '/api/entrys/{id}', `/api/entrys/${hidden.id}`, undefined, anonymous)).status,
        ).to.equal(404);
        const put = await api.call('PUT', '/api/boards/{id}', `/api/boards/${board.id}`, { title: 'Hello' }, anonymous);
        expect(put.status, put.text).to.equal(200);
        expect(put.body).to.include({ title: 'Hello' });
        const putEntry = await api.call(
          'PUT',
          '/api/entrys/{id}',
          `/api/entrys/${entry.id}`,
          { message: 'hello!' },
          anonymous,
        );
        expect(putEntry.status, putEntry.text).to.equal(200);
        // A Ref still has to point at something.
        const dangling = await api.call(
          'POST',
          '/api/entrys',
          '/api/entrys',
          { boardId: '01ARZ3NDEKTSV4RRFFQ69G5FAV', message: 'x' },
          anonymous,
        );
        expect(dangling.status).to.equal(422);
        expect(errorOf(dangling).code).to.equal('REFERENCE_NOT_FOUND');
        // `delete = false` is written: refused, and nothing is deleted.
        const del = await api.call('DELETE', '/api/entrys/{id}', `/api/entrys/${entry.id}`, undefined, anonymous);
        expect(del.status).to.equal(401);
        expect(await app.rows.get('SELECT 1 FROM "Entry" WHERE "id" = ?', [entry.id])).to.not.equal(undefined);
        expect(
          (await api.call('DELETE', '/api/boards/{id}', `/api/boards/${board.id}`, undefined, anonymous)).status,
        ).to.equal(409);
      });

      it('runs no command: commands need an actor, as in Zebric 0.6 (401, nothing written)', async () => {
        const board = await api.create('boards', { title: 'Commands' }, anonymous);
        const entry = await api.create('entrys', { boardId: board.id, message: 'hide me' }, anonymous);
        const res = await api.command('hide_entry', entry.id as string, {}, anonymous);
        expect(res.status).to.equal(401);
        // A Boolean is stored 0/1 on SQLite, false/true on PostgreSQL.
        const stored = await app.rows.get('SELECT "hidden" FROM "Entry" WHERE "id" = ?', [entry.id]);
        expect(stored).to.deep.equal({ hidden: database === 'sqlite' ? 0 : false });
      });

      it('describes the public operations without security requirements, and says so in its README', () => {
        const doc = JSON.parse(fs.readFileSync(path.join(appDir, 'openapi.json'), 'utf8'));
        expect(doc.components.securitySchemes).to.equal(undefined);
        for (const op of [
          doc.paths['/api/boards'].get,
          doc.paths['/api/boards'].post,
          doc.paths['/api/boards/{id}'].put,
        ]) {
          expect(op.security).to.equal(undefined);
          // Public, yet a credential the app does not know is refused, never read as anonymous.
          expect(op.responses['401']).to.deep.equal({ $ref: '#/components/responses/Unauthenticated' });
        }
        expect(doc.paths['/api/entrys/{id}'].delete.responses['401']).to.not.equal(undefined);
        const readme = fs.readFileSync(path.join(appDir, 'README.md'), 'utf8');
        expect(readme).to.contain('The blueprint has no `[auth]`');
        expect(readme).to.contain('- `Board` (`/api/boards`): anyone may read, create, update, delete.');
        expect(readme).to.contain('- `Entry` (`/api/entrys`): anyone may read, create, update.');
        expect(readme).to.contain('none of them can run (`401`)');
        expect(readme).not.to.contain('Callers are API keys');
      });

      it('in production, says so on stderr: an upper-case WARNING that anyone can read and change them', async () => {
        const { warnings, errors } = await startAnother(app, { NODE_ENV: 'production', SESSION_SECRET });
        expect(errors).to.deep.equal([
          'WARNING: Board (/api/boards) is public: anyone can read and change it without signing in ' +
            '(read, create, update, delete); the blueprint has no [auth]',
          'WARNING: Entry (/api/entrys) is public: anyone can read and change it without signing in ' +
            '(read, create, update); the blueprint has no [auth]',
        ]);
        expect(warnings.filter((w) => w.startsWith('public entity'))).to.deep.equal([]);
      });

      it('the started server (npm run dev) prints the warnings on stderr with the warning: prefix', async () => {
        const server = await startApp(appDir, {
          SESSION_SECRET,
          DATABASE_URL: await databaseUrl(database, 'zebric_no_auth_dev'),
        });
        try {
          expect(server.output()).to.contain(
            'warning: public entity Board (/api/boards): anyone may read, create, update, delete it',
          );
          const created = await request(server.url, 'POST', '/api/boards', { json: { title: 'From the server' } });
          expect(created.status).to.equal(201);
        } finally {
          await server.stop();
        }
      });
    });

  for (const database of DATABASES)
    describe(`people are the records of the User entity (user-entity, ${database})`, () => {
      let appDir: string;
      let app: AppOnDatabase;
      let api: Api;
      let ada: { client: SessionClient; id: string };
      let bob: { client: SessionClient; id: string };

      before(async () => {
        ({ appDir } = await generated('user-entity', database));
        app = await bootOnDatabase(appDir, await databaseUrl(database, 'zebric_user_entity'), { SESSION_SECRET });
        api = new Api(() => app.url, appDir, null);
        const a = await signUp(app.url, { email: 'Ada@Example.com', password: PASSWORD, name: 'Ada', age: 36 });
        expect(a.res.status, a.res.text).to.equal(201);
        ada = { client: a.client, id: a.client.actor.id as string };
        const b = await signUp(app.url, { email: 'bob@example.com', password: PASSWORD, name: 'Bob' });
        expect(b.res.status, b.res.text).to.equal(201);
        bob = { client: b.client, id: b.client.actor.id as string };
      });
      after(async () => app?.close());

      it('typechecks, with no line over 120 characters', () => expectCleanApp(appDir));

      it('sign-up makes a User record (defaults applied) whose id is the actor id, without the password', async () => {
        const { res } = await signUp(app.url, {
          email: 'carol@example.com',
          password: PASSWORD,
          name: 'Carol',
          bio: 'hi',
        });
        expect(res.status, res.text).to.equal(201);
        const actor = (res.body as { actor: Rec }).actor;
        expect(actor).to.include({ kind: 'user', type: 'user', email: 'carol@example.com', role: 'member' });
        expect(actor.effectiveId).to.equal(actor.id);
        expect(actor.roles).to.deep.equal(['member']);
        expect(actor, 'the metadata stays on the server').not.to.have.property('metadata');
        const record = await app.rows.get('SELECT * FROM "User" WHERE "id" = ?', [actor.id]);
        expect(record).to.deep.equal({
          id: actor.id,
          email: 'carol@example.com',
          _bp_key_email: 'carol@example.com',
          name: 'Carol',
          bio: 'hi',
          age: null,
          role: 'member',
        });
        const credentials = await app.rows.get('SELECT * FROM "_bp_users" WHERE "id" = ?', [actor.id]);
        expect(Object.keys(credentials ?? {}).sort()).to.deep.equal(['createdAt', 'id', 'passwordHash', 'roles']);
        // The User API shows the record's own fields, never credentials.
        const seen = await api.get('users', actor.id as string, { session: ada.client });
        expect(Object.keys(seen).sort()).to.deep.equal(['age', 'bio', 'email', 'id', 'name', 'role']);
        const list = await api.call('GET', '/api/users', '/api/users', undefined, { session: ada.client });
        expect(JSON.stringify(list.body)).not.to.match(/passwordHash|scrypt/);
      });

      it(
        "a signed-up author's post satisfies its Ref to User.id and the ownership rule; " +
          "the draft is the author's alone",
        async () => {
          const post = await api.create('posts', { title: 'Draft', authorId: ada.id }, { session: ada.client });
          expect(post).to.include({ authorId: ada.id, published: false });
          expect((await api.get('posts', post.id as string, { session: ada.client })).title).to.equal('Draft');
          const asBob = await api.call('GET', '/api/posts/{id}', `/api/posts/${post.id}`, undefined, {
            session: bob.client,
          });
          expect(asBob.status).to.equal(404);
          const bobsList = await api.call('GET', '/api/posts', '/api/posts', undefined, { session: bob.client });
          expect((bobsList.body as { items: Rec[] }).items.map((p) => p.id)).not.to.include(post.id);
          const adasList = await api.call('GET', '/api/posts', '/api/posts', undefined, { session: ada.client });
          expect((adasList.body as { items: Rec[] }).items.map((p) => p.id)).to.include(post.id);
          // Nobody writes as someone else.
          const forged = await api.call(
            'POST',
            '/api/posts',
            '/api/posts',
            { title: 'Forged', authorId: ada.id },
            { session: bob.client, idem: 'forged-1' },
          );
          expect(forged.status).to.equal(403);
          const published = await api.call(
            'PUT',
            '/api/posts/{id}',
            `/api/posts/${post.id}`,
            { published: true },
            { session: ada.client },
          );
          expect(published.status, published.text).to.equal(200);
          expect((await api.get('posts', post.id as string, { session: bob.client })).published).to.equal(true);
        },
      );

      it('refuses a sign-up the way it refuses a User create, and stores nothing', async () => {
        const users = await app.rows.count('User');
        const credentials = await app.rows.count('_bp_users');
        const cases: Array<[Rec, number, string, string[]]> = [
          [{ email: 'x1@example.com', password: PASSWORD }, 400, 'VALIDATION_FAILED', ['name:REQUIRED']],
          [
            { email: 'x2@example.com', password: PASSWORD, name: 'X', shoeSize: 9 },
            400,
            'VALIDATION_FAILED',
            ['shoeSize:UNKNOWN_FIELD'],
          ],
          [
            { email: 'x3@example.com', password: PASSWORD, name: 'X', age: 'old' },
            400,
            'VALIDATION_FAILED',
            ['age:INVALID_TYPE'],
          ],
          [
            { email: 'x4@example.com', password: PASSWORD, name: 'X', role: 'admin' },
            403,
            'FORBIDDEN',
            ['role:FIELD_WRITE_DENIED'],
          ],
          [
            { email: 'x5@example.com', password: PASSWORD, name: 'X', id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' },
            403,
            'FORBIDDEN',
            ['id:FIELD_WRITE_DENIED'],
          ],
          [{ email: 'ADA@example.COM', password: PASSWORD, name: 'Ada again' }, 409, 'EMAIL_TAKEN', []],
        ];
        for (const [body, status, code, details] of cases) {
          const { res } = await signUp(app.url, body);
          expect(res.status, `${JSON.stringify(body)}: ${res.text}`).to.equal(status);
          expect(errorOf(res).code).to.equal(code);
          expect((errorOf(res).details ?? []).map((d) => `${d.field}:${d.code}`)).to.deep.equal(details);
        }
        expect(await app.rows.count('User')).to.equal(users);
        expect(await app.rows.count('_bp_users')).to.equal(credentials);
      });

      it(
        'signs in by the login field in any letter case; ' +
          'changing the e-mail through the API changes how they sign in',
        async () => {
          await SessionClient.login(app.url, 'ADA@example.com', PASSWORD);
          const { client, res } = await signUp(app.url, {
            email: 'dora@example.com',
            password: PASSWORD,
            name: 'Dora',
          });
          expect(res.status).to.equal(201);
          const id = client.actor.id as string;
          const moved = await api.call(
            'PUT',
            '/api/users/{id}',
            `/api/users/${id}`,
            { email: 'Dora.New@example.com' },
            { session: client },
          );
          expect(moved.status, moved.text).to.equal(200);
          const old = await request(app.url, 'POST', '/api/auth/login', {
            json: { email: 'dora@example.com', password: PASSWORD },
          });
          expect(old.status).to.equal(401);
          const again = await SessionClient.login(app.url, 'dora.new@example.com', PASSWORD);
          expect(again.actor.id).to.equal(id);
          // The address is unique in any letter case: nobody else may take it.
          const clash = await api.call(
            'PUT',
            '/api/users/{id}',
            `/api/users/${bob.id}`,
            { email: 'DORA.NEW@example.com' },
            { session: bob.client },
          );
          expect(clash.status).to.equal(409);
        },
      );

      // SQLite's lower() folds A to Z only: an address with a capital beyond them, written to the
      // record through the API, must still be found when it is sent as written (sign-in, sign-up's
      // "taken", the users command), not only in the lower case the forms make of it.
      it(
        'signs in by an address with a capital beyond A to Z as the record holds it; ' +
          'sign-up and the users command find it',
        async () => {
          const { client, res } = await signUp(app.url, {
            email: 'elise@example.com',
            password: PASSWORD,
            name: 'Elise',
          });
          expect(res.status, res.text).to.equal(201);
          const id = client.actor.id as string;
          const moved = await api.call(
            'PUT',
            '/api/users/{id}',
            `/api/users/${id}`,
            { email: 'Élise@Example.com' },
            { session: client },
          );
          expect(moved.status, moved.text).to.equal(200);
          const again = await SessionClient.login(app.url, 'Élise@example.com', PASSWORD);
          expect(again.actor.id).to.equal(id);
          const taken = await signUp(app.url, { email: 'Élise@EXAMPLE.com', password: PASSWORD, name: 'Other' });
          expect(taken.res.status, taken.res.text).to.equal(409);
          expect((taken.res.body as { error: { code: string } }).error.code).to.equal('EMAIL_TAKEN');
          const found = usersCli(app.appDir, app.databaseUrl, [
            'update',
            '--email',
            'Élise@example.com',
            '--field',
            'age=30',
          ]);
          expect(found.status, found.stderr).to.equal(0);
          expect(await app.rows.get('SELECT "email", "age" FROM "User" WHERE "id" = ?', [id])).to.deep.equal({
            email: 'Élise@Example.com',
            age: 30,
          });
        },
      );

      // Both databases compare one form of a unique address (its key column: NFC and Unicode lower
      // case), so it is one address in any letter case, É included, for sign-in, sign-up and the
      // unique index alike.
      {
        it('signs in by an address with a capital beyond A-Z in any letter case; sign-up finds it taken', async () => {
          const { client, res } = await signUp(app.url, {
            email: 'elodie@example.com',
            password: PASSWORD,
            name: 'Elodie',
          });
          expect(res.status, res.text).to.equal(201);
          const id = client.actor.id as string;
          const moved = await api.call(
            'PUT',
            '/api/users/{id}',
            `/api/users/${id}`,
            { email: 'Élodie@Example.com' },
            { session: client },
          );
          expect(moved.status, moved.text).to.equal(200);
          for (const address of ['Élodie@example.com', 'élodie@EXAMPLE.com']) {
            expect((await SessionClient.login(app.url, address, PASSWORD)).actor.id, address).to.equal(id);
          }
          const taken = await signUp(app.url, { email: 'ÉLODIE@example.com', password: PASSWORD, name: 'Other' });
          expect(taken.res.status, taken.res.text).to.equal(409);
          expect((taken.res.body as { error: { code: string } }).error.code).to.equal('EMAIL_TAKEN');
        });

        it('refuses an address that folds onto another beyond A to Z (409), storing nothing', async () => {
          const first = await signUp(app.url, { email: 'émile@example.com', password: PASSWORD, name: 'Émile' });
          expect(first.res.status, first.res.text).to.equal(201);
          const second = await signUp(app.url, { email: 'emile2@example.com', password: PASSWORD, name: 'Other' });
          expect(second.res.status, second.res.text).to.equal(201);
          const id = second.client.actor.id as string;
          const moved = await api.call(
            'PUT',
            '/api/users/{id}',
            `/api/users/${id}`,
            { email: 'Émile@Example.com' },
            { session: second.client },
          );
          expect(moved.status, moved.text).to.equal(409);
          expect(await app.rows.get('SELECT "email" FROM "User" WHERE "id" = ?', [id])).to.deep.equal({
            email: 'emile2@example.com',
          });
          expect((await SessionClient.login(app.url, 'Émile@example.com', PASSWORD)).actor.id).to.equal(
            first.client.actor.id,
          );
        });
      }

      it('the sign-up form asks for the User fields and creates the record', async () => {
        const browser = new CookieClient(app.url);
        const page = await browser.send('GET', '/login?mode=signup');
        expect(page.text).to.contain('name="name"').and.contain('name="bio"').and.contain('name="age" type="number"');
        expect(page.text, 'roles are not chosen at sign-up').not.to.contain('name="role"');
        const token = /name="_csrf" value="([^"]+)"/.exec(page.text)![1];
        const posted = await browser.send('POST', '/api/auth/signup', {
          form: { _csrf: token, email: 'eve@example.com', password: PASSWORD, name: 'Eve', age: '41', bio: '' },
        });
        expect(posted.status, posted.text).to.equal(303);
        expect(
          await app.rows.get('SELECT "name", "age", "bio" FROM "User" WHERE "email" = ?', ['eve@example.com']),
        ).to.deep.equal({ name: 'Eve', age: 41, bio: null });
        const bad = new CookieClient(app.url);
        const again = await bad.send('GET', '/login?mode=signup');
        const token2 = /name="_csrf" value="([^"]+)"/.exec(again.text)![1];
        const refused = await bad.send('POST', '/api/auth/signup', {
          form: { _csrf: token2, email: 'fay@example.com', password: PASSWORD, name: '' },
        });
        expect(refused.status).to.equal(400);
        expect(refused.text).to.contain('name is required');
      });

      it(
        "a person's roles are their record's role field, which the users command's set-roles writes; " +
          'it applies at once',
        async () => {
          const r = usersCli(app.appDir, app.databaseUrl, [
            'set-roles',
            '--email',
            'bob@example.com',
            '--role',
            'admin',
          ]);
          expect(r.status, r.stderr).to.equal(0);
          expect(r.stdout).to.equal('bob@example.com now has roles: admin\n');
          // One source of truth: the record shows the role Bob acts with.
          expect(await app.rows.get('SELECT "role" FROM "User" WHERE "id" = ?', [bob.id])).to.deep.equal({
            role: 'admin',
          });
          const session = await request(app.url, 'GET', '/api/auth/session', { headers: bob.client.headers('GET') });
          expect((session.body as { actor: Rec }).actor).to.include({ role: 'admin' });
          expect((session.body as { actor: { roles: string[] } }).actor.roles).to.deep.equal(['admin']);
          expect((await api.get('users', bob.id, { session: bob.client })).role).to.equal('admin');
          // As an admin (a given role), Bob may change Ada's role field; Ada becomes an editor.
          const promoted = await api.call(
            'PUT',
            '/api/users/{id}',
            `/api/users/${ada.id}`,
            { role: 'editor' },
            { session: bob.client },
          );
          expect(promoted.status, promoted.text).to.equal(200);
          const adaNow = await request(app.url, 'GET', '/api/auth/session', { headers: ada.client.headers('GET') });
          expect((adaNow.body as { actor: { roles: string[] } }).actor.roles).to.deep.equal(['editor']);
          // Ada may not give herself a role: the field's write rule holds.
          const self = await api.call(
            'PUT',
            '/api/users/{id}',
            `/api/users/${ada.id}`,
            { role: 'admin' },
            { session: ada.client },
          );
          expect(self.status).to.equal(403);
        },
      );

      it(
        'the users command creates, updates and lists User records, ' +
          'reading --field by type and validating like a create',
        async () => {
          const add = usersCli(
            app.appDir,
            app.databaseUrl,
            ['add', '--email', 'Gus@Example.com', '--field', 'name=Gus', '--field', 'age=42', '--role', 'editor'],
            `${PASSWORD}\n`,
          );
          expect(add.status, add.stderr).to.equal(0);
          const id = /User (\w+)/.exec(add.stdout)![1];
          // --role editor is the record's role: printed, stored and acted with alike.
          expect(add.stdout).to.equal(`added gus@example.com (User ${id}, roles: editor)\n`);
          expect(await app.rows.get('SELECT * FROM "User" WHERE "id" = ?', [id])).to.deep.equal({
            id,
            email: 'gus@example.com',
            _bp_key_email: 'gus@example.com',
            name: 'Gus',
            bio: null,
            age: 42,
            role: 'editor',
          });
          const gus = await SessionClient.login(app.url, 'gus@example.com', PASSWORD);
          expect(gus.actor.roles).to.deep.equal(['editor']);
          expect(gus.actor.role).to.equal('editor');
          // Without --role the record's default role is the one printed.
          const plain = usersCli(
            app.appDir,
            app.databaseUrl,
            ['add', '--email', 'jo@example.com', '--field', 'name=Jo'],
            `${PASSWORD}\n`,
          );
          expect(plain.stdout, plain.stderr).to.match(/^added jo@example\.com \(User \w+, roles: member\)\n$/);
          // Written as the app's own work: the audit trail names the system actor.
          const audit = await app.rows.all('SELECT "operation", "actorId" FROM "_bp_audit" WHERE "recordId" = ?', [id]);
          expect(audit).to.deep.equal([{ operation: 'User.create', actorId: 'system' }]);

          const update = usersCli(app.appDir, app.databaseUrl, [
            'update',
            '--email',
            'gus@example.com',
            '--field',
            'age=43',
            '--field',
            'role=admin',
          ]);
          expect(update.status, update.stderr).to.equal(0);
          expect(await app.rows.get('SELECT "age", "role" FROM "User" WHERE "id" = ?', [id])).to.deep.equal({
            age: 43,
            role: 'admin',
          });

          const refusals: Array<[string[], RegExp]> = [
            // A `role` field holds one role: two would leave the record showing one and the person acting with two.
            [
              ['add', '--email', 'kit@example.com', '--field', 'name=Kit', '--role', 'editor', '--role', 'admin'],
              /^error: User\.role holds one role: give one --role \(got editor, admin\)$/m,
            ],
            [
              ['set-roles', '--email', 'gus@example.com', '--role', 'editor', '--role', 'admin'],
              /^error: User\.role holds one role/m,
            ],
            [['add', '--email', 'kit@example.com', '--field', 'name=Kit', '--role', 'wizard'], /^error: .*role/m],
            [['update', '--email', 'gus@example.com', '--field', 'age=old'], /^error: age must be an integer$/m],
            [
              ['update', '--email', 'gus@example.com', '--field', 'shoeSize=9'],
              /^error: User has no field "shoeSize"$/m,
            ],
            [['add', '--email', 'hal@example.com', '--field', 'age=1'], /^error: name is required$/m],
            [
              ['update', '--email', 'nobody@example.com', '--field', 'age=1'],
              /no User with the e-mail nobody@example.com/,
            ],
          ];
          for (const [args, message] of refusals) {
            const r = usersCli(app.appDir, app.databaseUrl, args, `${PASSWORD}\n`);
            expect(r.status, args.join(' ')).to.equal(1);
            expect(r.stderr).to.match(message);
          }
          expect(await app.rows.get('SELECT "age" FROM "User" WHERE "id" = ?', [id])).to.deep.equal({ age: 43 });
          expect(await app.rows.get('SELECT 1 FROM "User" WHERE "email" = ?', ['hal@example.com'])).to.equal(undefined);

          const list = usersCli(app.appDir, app.databaseUrl, ['list']);
          expect(list.status).to.equal(0);
          const lines = list.stdout.trim().split('\n');
          expect(lines[0]).to.match(/^ID\s+EMAIL\s+ROLES\s+PASSWORD$/);
          expect(lines.find((l) => l.startsWith(id))).to.match(
            new RegExp(`^${id}\\s+gus@example\\.com\\s+admin\\s+set$`),
          );
        },
      );

      it('deleting a User record removes its credentials and ends its sessions in the same transaction', async () => {
        const { client, res } = await signUp(app.url, { email: 'ivy@example.com', password: PASSWORD, name: 'Ivy' });
        expect(res.status).to.equal(201);
        const id = client.actor.id as string;
        const sessionsOf = async () =>
          Number((await app.rows.get('SELECT COUNT(*) AS n FROM "_bp_sessions" WHERE "userId" = ?', [id]))?.n);
        expect(await app.rows.count('_bp_sessions')).to.be.greaterThan(0);
        expect(await sessionsOf()).to.equal(1);
        // Bob (admin, given by the users command above) deletes Ivy's record.
        const del = await api.call('DELETE', '/api/users/{id}', `/api/users/${id}`, undefined, { session: bob.client });
        expect(del.status, del.text).to.equal(204);
        expect(await app.rows.get('SELECT 1 FROM "_bp_users" WHERE "id" = ?', [id])).to.equal(undefined);
        expect(await sessionsOf()).to.equal(0);
        const after = await request(app.url, 'GET', '/api/auth/session', { headers: client.headers('GET') });
        expect((after.body as { actor: Rec }).actor).to.include({ kind: 'anonymous' });
        const login = await request(app.url, 'POST', '/api/auth/login', {
          json: { email: 'ivy@example.com', password: PASSWORD },
        });
        expect(login.status).to.equal(401);
      });
    });

  it("refuses an Integer key on the User entity people sign in as (a person's id is text)", () => {
    const r = bp(['validate', path.join(FIXTURES, 'invalid-identity/user-integer-key/app.toml')]);
    expect(r.status).to.equal(1);
    const errors = r.stderr.split('\n').filter((l) => l.includes('[error '));
    expect(errors).to.deep.equal([
      `${path.join('test', 'fixtures', 'zebric', 'invalid-identity', 'user-integer-key', 'app.toml')}:11:18 ` +
        'entity.User.fields.0.type: ' +
        'people sign in as User records, so its key cannot be Integer [error INVALID_PRIMARY_KEY]',
    ]);
  });

  for (const database of DATABASES)
    describe(`the actor's Zebric keys: effectiveId, type, metadata (actor-keys, ${database})`, () => {
      const KEY = 'planner-key-0123456789abcdef';
      let appDir: string;
      let app: AppOnDatabase;
      let api: Api;
      let ann: { client: SessionClient; id: string };
      let ben: { client: SessionClient; id: string };
      let cal: { client: SessionClient; id: string };
      const planner = { key: KEY };
      /** The planner acting for a person: trusted server code (createApp's delegate hook) says so. */
      const plannerFor = (id: string) => ({ key: KEY, headers: { 'x-test-delegated-by': id } });

      before(async () => {
        ({ appDir } = await generated('actor-keys', database));
        // The delegation hook of the app's own src/extend.ts (the team's file), standing in for trusted server code.
        fs.writeFileSync(
          path.join(appDir, 'src', 'extend.ts'),
          [
            "import { defineExtension } from './runtime/http/extension.ts';",
            '',
            'export default defineExtension({',
            '  delegate(req, actor) {',
            "    const header = req.headers['x-test-delegated-by'];",
            "    return actor.id === 'planner' && typeof header === 'string' ? header : undefined;",
            '  },',
            '});',
            '',
          ].join('\n'),
        );
        app = await bootOnDatabase(appDir, await databaseUrl(database, 'zebric_actor_keys'), {
          SESSION_SECRET,
          PLANNER_API_KEY: KEY,
        });
        api = new Api(() => app.url, appDir, null);
        const person = async (email: string, fields: Rec) => {
          const { res, client } = await signUp(app.url, { email, password: PASSWORD, ...fields });
          expect(res.status, res.text).to.equal(201);
          return { client, id: client.actor.id as string };
        };
        ann = await person('ann@example.com', { name: 'Ann' });
        ben = await person('ben@example.com', { name: 'Ben', team: 'red' });
        cal = await person('cal@example.com', { name: 'Cal' });
      });
      after(async () => app?.close());

      it('typechecks, with no line over 120 characters', () => expectCleanApp(appDir));

      it('an API key without agentId is its name; credentialId and displayName default as in Zebric', async () => {
        const res = await request(app.url, 'GET', '/api/auth/session', { headers: { authorization: `Bearer ${KEY}` } });
        expect((res.body as { actor: Rec }).actor).to.deep.equal({
          kind: 'agent',
          type: 'agent',
          id: 'planner',
          effectiveId: 'planner',
          credentialId: 'planner',
          roles: ['bot'],
          role: 'bot',
          scopes: [],
          displayName: 'Planning bot',
        });
      });

      it('reads actor.metadata (a User record field) in rules, in memory and in the SQL row filter', async () => {
        const task = await api.create(
          'tasks',
          { title: 'Paint', team: 'blue', ownerId: ann.id },
          { session: ann.client },
        );
        // $currentUser.team falls back to the metadata: Ann is on the blue team, not the red one.
        const wrongTeam = await api.call(
          'POST',
          '/api/tasks',
          '/api/tasks',
          { title: 'X', team: 'red' },
          { session: ann.client, idem: 'wrong-team' },
        );
        expect(wrongTeam.status).to.equal(403);
        const bens = await api.call('GET', '/api/tasks', '/api/tasks', undefined, { session: ben.client });
        expect((bens.body as { items: Rec[] }).items.map((t) => t.id)).not.to.include(task.id);
        expect(
          (await api.call('GET', '/api/tasks/{id}', `/api/tasks/${task.id}`, undefined, { session: ben.client }))
            .status,
        ).to.equal(404);
        expect((await api.get('tasks', task.id as string, { session: cal.client })).title).to.equal('Paint');
        // The agent sees every team's tasks (actor.type), and creates for any team.
        const planned = await api.create('tasks', { title: 'Plan', team: 'red' }, planner);
        const all = await api.call('GET', '/api/tasks', '/api/tasks', undefined, planner);
        expect((all.body as { items: Rec[] }).items.map((t) => t.id)).to.include.members([task.id, planned.id]);
        // A person moving to the red team sees its tasks at once: metadata is read on every request.
        const moved = await api.call(
          'PUT',
          '/api/users/{id}',
          `/api/users/${cal.id}`,
          { team: 'red' },
          { session: cal.client },
        );
        expect(moved.status, moved.text).to.equal(200);
        const cals = await api.call('GET', '/api/tasks', '/api/tasks', undefined, { session: cal.client });
        expect((cals.body as { items: Rec[] }).items.map((t) => t.id))
          .to.include(planned.id)
          .and.not.include(task.id);
      });

      it('update rules compare actor.effectiveId; mutations write effectiveId, type and metadata', async () => {
        const task = await api.create(
          'tasks',
          { title: 'Sweep', team: 'blue', ownerId: ann.id },
          { session: ann.client },
        );
        const cal2 = await signUp(app.url, { email: 'dee@example.com', password: PASSWORD, name: 'Dee' });
        const dee = cal2.client;
        expect(
          (await api.call('PUT', '/api/tasks/{id}', `/api/tasks/${task.id}`, { title: 'Sweep!' }, { session: dee }))
            .status,
        ).to.equal(403);
        expect(
          (
            await api.call(
              'PUT',
              '/api/tasks/{id}',
              `/api/tasks/${task.id}`,
              { title: 'Sweep!' },
              { session: ann.client },
            )
          ).status,
        ).to.equal(200);
        const claimed = await api.command('claim_task', task.id as string, {}, { session: ann.client });
        expect(claimed.status, claimed.text).to.equal(200);
        expect(claimed.body).to.include({
          status: 'claimed',
          claimedBy: ann.id,
          claimedByEmail: 'ann@example.com',
          claimedByType: 'user',
          claimerName: 'Ann',
        });
        // Dee (blue team) may read it, but the policy compares record.claimedBy with her effectiveId.
        expect((await api.command('finish_task', task.id as string, {}, { session: dee })).status).to.equal(403);
        const done = await api.command('finish_task', task.id as string, {}, { session: ann.client });
        expect(done.status, done.text).to.equal(200);
        expect(done.body).to.include({ status: 'done' });
      });

      it('an agent acting for a person (trusted delegation) has that person as its effectiveId', async () => {
        const task = await api.create(
          'tasks',
          { title: 'Water', team: 'blue', ownerId: ann.id },
          { session: ann.client },
        );
        const byAgent = await api.command(
          'claim_task',
          task.id as string,
          {},
          { ...plannerFor(ann.id), idem: 'claim-water' },
        );
        expect(byAgent.status, byAgent.text).to.equal(200);
        // The policy read actor.metadata.name (the key's displayName); the mutations wrote the agent's
        // type and the person it acts for as effectiveId; an agent's metadata has no e-mail.
        expect(byAgent.body).to.include({
          claimedBy: ann.id,
          claimedByType: 'agent',
          claimerName: 'Planning bot',
          claimedByEmail: null,
        });
        // Without the delegation, the planner is not the claimer...
        expect(
          (await api.command('finish_task', task.id as string, {}, { ...planner, idem: 'finish-1' })).status,
        ).to.equal(403);
        // ...with it, effectiveId is Ann's id, and the policy holds.
        const finished = await api.command(
          'finish_task',
          task.id as string,
          {},
          { ...plannerFor(ann.id), idem: 'finish-2' },
        );
        expect(finished.status, finished.text).to.equal(200);
        const trail = await api.trail('Task', task.id as string, { session: ann.client });
        expect(trail.map((a) => [a.operation, a.actorId, a.credentialId, a.delegatedBy])).to.deep.include.members([
          ['command:FinishTask', 'planner', 'planner', ann.id],
          ['command:ClaimTask', 'planner', 'planner', ann.id],
        ]);
      });

      it('refuses at generate time actor keys it does not know, with a did-you-mean, the same way everywhere', () => {
        const r = bp(['validate', path.join(FIXTURES, 'invalid-identity/actor-keys-unknown/app.toml')]);
        expect(r.status).to.equal(1);
        const found = r.stderr.split('\n').filter((l) => l.includes('UNKNOWN_ACTOR_KEY'));
        expect(found).to.have.length(6);
        for (const [path_, text] of [
          ['entity.Task.access.read', 'the actor has no "efectiveId"'],
          ['entity.Task.access.update', `the actor's metadata has no "teem"`],
          ['entity.Task.access.create.team', 'the actor has no "tean"'],
          ['command.Claim.policy', 'the actor has no "name"'],
          ['command.Claim.mutations.claimedBy', 'actor.effectivId is not part of the actor'],
          ['command.Claim.mutations.claimedByEmail', `the actor's metadata has no "emial"`],
        ]) {
          expect(
            found.some((l) => l.includes(`${path_}: ${text}`)),
            `${path_}: ${text}\n${r.stderr}`,
          ).to.equal(true);
        }
        expect(r.stderr).to.contain('did you mean "metadata.name"?');
        expect(r.stderr).to.contain('did you mean "effectiveId"?');
        expect(r.stderr).to.contain('did you mean "team"?');
      });
    });

  for (const database of DATABASES)
    describe(`API keys with Zebric defaults, and permissions for the roleless (agent-defaults, ${database})`, () => {
      const READER = 'reader-key-0123456789abcdef';
      const WRITER = 'writer-key-0123456789abcdef';
      let appDir: string;
      let app: AppOnDatabase;
      let api: Api;
      const anonymous = { key: null, idem: undefined };

      before(async () => {
        ({ appDir } = await generated('agent-defaults', database));
        app = await bootOnDatabase(appDir, await databaseUrl(database, 'zebric_agent_defaults'), {
          SESSION_SECRET,
          READER_API_KEY: READER,
          WRITER_API_KEY: WRITER,
        });
        api = new Api(() => app.url, appDir, WRITER);
      });
      after(async () => app?.close());

      it('validates without agentId (it defaults to the name), and typechecks', () => {
        const r = bp(['validate', path.join(FIXTURES, 'agent-defaults/app.toml')]);
        expect(r.status, r.stderr).to.equal(0);
        expect(r.stderr).not.to.contain('MISSING_KEY');
        expectCleanApp(appDir);
      });

      it('a key with roles: create, list, get and update on every entity; its deny holds', async () => {
        const article = await api.create('articles', { title: 'Launch' });
        const comment = await api.create('comments', { articleId: article.id, text: 'First' });
        expect((await api.call('GET', '/api/articles', '/api/articles')).status).to.equal(200);
        expect(await api.get('articles', article.id as string)).to.deep.equal(article);
        expect(await api.get('comments', comment.id as string)).to.deep.equal(comment);
        const put = await api.call(
          'PUT',
          '/api/articles/{id}',
          `/api/articles/${article.id}`,
          { body: 'Text' },
          { idem: 'put-1' },
        );
        expect(put.status).to.equal(200);
        const putComment = await api.call(
          'PUT',
          '/api/comments/{id}',
          `/api/comments/${comment.id}`,
          { text: 'First!' },
          { idem: 'put-2' },
        );
        expect(putComment.status).to.equal(200);
        const del = await api.call('DELETE', '/api/articles/{id}', `/api/articles/${article.id}`, undefined, {
          idem: 'del-1',
        });
        expect(del.status).to.equal(403);
      });

      it(
        'a key without roles has none: it is held to the `anonymous` permissions (read, comment), ' +
          'like anonymous callers',
        async () => {
          const article = await api.create('articles', { title: 'Roleless' });
          const reader = { key: READER };
          expect((await api.call('GET', '/api/articles', '/api/articles', undefined, reader)).status).to.equal(200);
          expect((await api.get('articles', article.id as string, reader)).title).to.equal('Roleless');
          const write = await api.call(
            'POST',
            '/api/articles',
            '/api/articles',
            { title: 'No' },
            { ...reader, idem: 'r-1' },
          );
          expect(write.status).to.equal(403);
          const comment = await api.create('comments', { articleId: article.id, text: 'Agreed' }, reader);
          const edit = await api.call(
            'PUT',
            '/api/comments/{id}',
            `/api/comments/${comment.id}`,
            { text: 'x' },
            { ...reader, idem: 'r-2' },
          );
          expect(edit.status).to.equal(403);
          // Its actor id and credential id are the key's name.
          const trail = await api.trail('Comment', comment.id as string);
          expect(trail.map((a) => [a.operation, a.actorId, a.credentialId])).to.deep.equal([
            ['Comment.create', 'reader', 'reader'],
          ]);

          // Anonymous callers get the same `anonymous` permissions: read, and comment.
          expect((await api.call('GET', '/api/articles', '/api/articles', undefined, anonymous)).status).to.equal(200);
          await api.create('comments', { articleId: article.id, text: 'Anonymous' }, anonymous);
          expect(
            (await api.call('POST', '/api/articles', '/api/articles', { title: 'No' }, anonymous)).status,
          ).to.equal(401);
          expect(
            (await api.call('PUT', '/api/comments/{id}', `/api/comments/${comment.id}`, { text: 'x' }, anonymous))
              .status,
          ).to.equal(401);
        },
      );
    });
});
