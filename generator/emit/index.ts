// Emit stage: the whole generated app as a map of relative path -> contents. Writes nothing.

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Blueprint } from '../model/types.ts';
import { emitAuthPages } from './auth-pages.ts';
import { emitBlueprintJson } from './blueprint-json.ts';
import { emitCommands } from './commands.ts';
import { emitEntityModule, entityFileName, hasFileFields, routesName } from './entities.ts';
import { lowerFirst } from '../model/relations.ts';
import { emitMigrations, type PreviousOutput } from './migrations.ts';
import { mcpTools } from '../contract/mcp-tools.ts';
import { emitMcp } from './mcp.ts';
import { emitOpenApi } from './openapi.ts';
import { TEMPLATE_DEPENDENCIES, usesTemplates } from './page-templates.ts';
import { emitPermissions } from './permissions.ts';
import { emitPrismaSchema } from './prisma-schema.ts';
import { PRISMA_DIR, PRISMA_PROVIDERS } from './prisma-providers.ts';
import { emitReadme } from './readme.ts';
import { emitRuntime } from './runtime.ts';
import { emitPlugins, pluginDependency } from './plugins.ts';
import { emitSkills } from './skills.ts';
import { builtInAdapters, emitWorkflows, workflowExports } from './workflows.ts';
import { emitPages } from './pages.ts';
import { render } from './templates.ts';
import { call, code, nonEmpty, tsLiteral, tsProperties, tsString, wrapText } from './ts-literal.ts';
import { publicActions } from '../model/access-defaults.ts';
import { hasSchedules, hasWebhooks } from '../model/workflows.ts';

/**
 * Versions the generated app depends on: the ones bp itself is built and tested with. Dependencies
 * are what `npm ci --omit=dev` installs in production: what dist/ imports, and esbuild, so that
 * `npm start` can build there too. Type checking, `npm run dev` (tsx) and the Prisma tools (the
 * app itself runs SQL, not Prisma Client) are for development only.
 */
export const APP_DEPENDENCIES: Record<string, string> = {
  '@modelcontextprotocol/sdk': '^1.32.2',
  'better-sqlite3': '^12.6.0',
  croner: '^11.0.1',
  'csrf-sync': '^4.2.1',
  esbuild: '^0.28.2',
  express: '^5.3.0',
  'express-session': '^1.19.0',
  // The first release tested with the runtime's use of `pg`'s pipeline mode (public API only).
  pg: '^8.23.1',
  // The metrics of the admin server and of METRICS_PORT; loaded only when one of them is on.
  'prom-client': '^15.1.3',
};
/**
 * What the uploads of `file` fields need (runtime/uploads): only apps with file fields depend on
 * them (busboy reads multipart bodies, file-type checks a file's bytes, the S3 client is loaded
 * when UPLOADS_URL names a bucket).
 */
export const UPLOAD_DEPENDENCIES: Record<string, string> = {
  '@aws-sdk/client-s3': '^3.1175.0',
  busboy: '^1.6.0',
  'file-type': '^22.3.0',
};
/**
 * What the built-in notification adapters send with (runtime/workflows/email-adapter.ts and
 * slack-adapter.ts): an app depends on one only where an adapter of its type is declared.
 */
export const ADAPTER_DEPENDENCIES: Record<string, Record<string, string>> = {
  email: { nodemailer: '^10.6.1' },
  slack: { '@slack/web-api': '^8.2.0' },
};
export const ADAPTER_DEV_DEPENDENCIES: Record<string, Record<string, string>> = {
  email: { '@types/nodemailer': '^8.0.2' },
};
/**
 * Node flags of `npm start`. A young generation of 4 MB semi-spaces (V8's default grows to 16 MB)
 * keeps the server's resident memory about 35 MB lower under load, at no measured cost in
 * throughput: the objects of a request rarely outlive it.
 */
export const START_NODE_FLAGS = ['--max-semi-space-size=4'];

export const APP_DEV_DEPENDENCIES: Record<string, string> = {
  '@prisma/adapter-better-sqlite3': '7.10.0',
  '@prisma/adapter-pg': '7.10.0',
  '@prisma/client': '7.10.0',
  '@types/better-sqlite3': '^9.6.0',
  '@types/express': '^5.0.6',
  '@types/express-session': '^1.18.2',
  '@types/node': '^20.19.43',
  '@types/pg': '^8.23.1',
  prisma: '7.10.1',
  tsx: '^4.23.0',
  typescript: '^5.9.3',
};

export interface EmitOptions {
  /** The blueprint path as shown in the generated README. */
  blueprintName: string;
  /** Absolute output folder: generated code imports user handlers relative to it. */
  outDir: string;
  previous: PreviousOutput;
}

export interface EmittedApp {
  /** Files bp owns: rewritten on every generation. */
  files: Map<string, string>;
  /** The team's files (src/extend.ts): written only where missing, never overwritten or removed. */
  scaffold: Map<string, string>;
}

export async function emitApp(bp: Blueprint, options: EmitOptions): Promise<EmittedApp> {
  const files = new Map<string, string>();
  const entities = bp.entities.map((e) => ({
    name: e.name,
    collection: e.collection,
    file: entityFileName(e),
    routesName: routesName(e),
    specName: `${lowerFirst(e.name)}Spec`,
    storeName: `${lowerFirst(e.name)}Store`,
    files: hasFileFields(e) && `${lowerFirst(e.name)}Files`,
  }));
  const uploads = entities.some((e) => e.files);
  // The uploads store: for file fields, and for plugins granted `storage` (runtime/plugins).
  const fileStore = uploads || bp.plugins.some((p) => p.trustLevel === 'full' || p.capabilities.includes('storage'));
  const deps = (table: Record<string, string>) =>
    Object.entries(table)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, version]) => ({ name, version }));
  const emailAuth = bp.auth.providers.includes('email');
  const authPages = emitAuthPages(bp);
  // /mcp only where there is a tool to serve: a skill action or a command.
  const tools = mcpTools(bp);
  const mcp = tools.length > 0;
  const userRecords = bp.auth.userRecords;
  const workflows = bp.workflows.length > 0;
  const { notifications, services } = workflowExports(bp);
  const adapters = builtInAdapters(bp);
  /** The entry points scripts/build.js bundles into dist/. */
  const entries = emailAuth ? ['server', 'users'] : ['server'];

  files.set(
    'package.json',
    render('app/package.json.hbs', {
      slug: bp.slug,
      version: bp.project.version,
      description: bp.project.description ?? '',
      emailAuth,
      nodeFlags: START_NODE_FLAGS.join(' '),
      // The template engines only for an app that compiles templates; the upload packages for file fields.
      dependencies: deps({
        ...APP_DEPENDENCIES,
        ...(usesTemplates(bp) ? TEMPLATE_DEPENDENCIES : {}),
        ...(fileStore ? UPLOAD_DEPENDENCIES : {}),
        ...Object.assign({}, ...adapters.map((kind) => ADAPTER_DEPENDENCIES[kind])),
        // The enabled [[plugins]]: `version` is their range, a `file:` folder written relative to the app.
        ...Object.fromEntries(
          bp.plugins.flatMap((p) => {
            const range = pluginDependency(p, options.outDir);
            return range === undefined ? [] : [[p.name, range]];
          }),
        ),
      }),
      devDependencies: deps({
        ...APP_DEV_DEPENDENCIES,
        ...Object.assign({}, ...adapters.map((kind) => ADAPTER_DEV_DEPENDENCIES[kind] ?? {})),
      }),
    }),
  );
  files.set('tsconfig.json', render('app/tsconfig.json.hbs', {}));
  files.set('scripts/build.js', render('app/scripts/build.js.hbs', { entries }));
  files.set('scripts/start.js', render('app/scripts/start.js.hbs', {}));
  files.set('.gitignore', render('app/gitignore.hbs', {}));
  files.set(
    'README.md',
    emitReadme(bp, { blueprintName: options.blueprintName, outDir: options.outDir, entries, mcpTools: tools }),
  );
  files.set('prisma.config.ts', render('app/prisma.config.ts.hbs', {}));
  // Each provider's schema and migrations; the engine runs for both at once.
  const migrations = await Promise.all(
    PRISMA_PROVIDERS.map(async (provider) => {
      const schema = emitPrismaSchema(bp, provider);
      files.set(`${PRISMA_DIR[provider]}/schema.prisma`, schema);
      return emitMigrations(provider, schema, options.previous[provider]);
    }),
  );
  for (const [p, content] of migrations.flatMap((m) => [...m])) files.set(p, content);
  files.set('openapi.json', emitOpenApi(bp));
  files.set('blueprint.json', emitBlueprintJson(bp, options.outDir));
  const pages = emitPages(bp);
  if (pages !== undefined) files.set('src/pages.ts', pages);
  // The project name is the blueprint's free text: a string literal in code, never code itself.
  const plugins = bp.plugins.length > 0;
  for (const [p, content] of emitPlugins(bp, options.outDir)) files.set(p, content);
  files.set('src/server.ts', render('app/src/server.ts.hbs', { nameLiteral: tsString(bp.project.name), plugins }));
  files.set(
    'src/app.ts',
    render('app/src/app.ts.hbs', {
      entities,
      // GET /uploads/<name>, reading the file fields of these entities' records.
      uploads:
        uploads &&
        tsLiteral(
          call(
            'downloadRouter',
            code('fileStore'),
            entities.flatMap((e) =>
              e.files ? [{ store: code(e.storeName), fields: code(`${e.files}.fieldNames`) }] : [],
            ),
          ),
          { indent: 2, lead: 10, trail: 2 },
        ),
      emailAuth,
      authPages: authPages !== undefined,
      mcp,
      pages: pages !== undefined,
      // The uploads of entities with file fields, for forms that post files to pages.
      pageFiles:
        pages !== undefined &&
        uploads &&
        tsLiteral(Object.fromEntries(entities.flatMap((e) => (e.files ? [[e.name, code(e.files)]] : []))), {
          indent: 6,
          lead: 13,
          trail: 1,
        }),
      // The job store, runner and workflow runtime only where there are workflows to run.
      workflows: workflows && {
        imports: [...(notifications ? ['NOTIFICATIONS'] : []), ...(services ? ['SERVICES'] : []), 'WORKFLOWS'].join(
          ', ',
        ),
      },
      notifications,
      services,
      closes: workflows || emailAuth,
      webhooks: hasWebhooks(bp),
      schedules: hasSchedules(bp),
      slug: bp.slug,
      title: tsString(bp.project.name),
      loginPath: tsString(bp.auth.loginPath),
      // Left out when empty: the provider reads no origins as none but the app's own.
      trustedOrigins:
        nonEmpty(bp.auth.trustedOrigins) && tsLiteral(bp.auth.trustedOrigins, { indent: 4, lead: 20, trail: 1 }),
      stores: tsLiteral(
        call(
          'new Map<string, EntityStore>',
          entities.map((e) => [e.name, code(e.storeName)]),
        ),
        { indent: 2, lead: 17, trail: 1 },
      ),
      plugins,
      fileStore,
      pipeline: tsLiteral(call('compose', ...pipelineSteps(emailAuth, hasWebhooks(bp), plugins).map(code)), {
        indent: 2,
        lead: 19,
        trail: 1,
      }),
      signup: bp.auth.signup,
      sessionDuration: bp.auth.session.duration,
      idleTimeout: bp.auth.session.idleTimeout,
      // One property a line: a key's roles and scopes make long lines otherwise.
      apiKeys: bp.auth.apiKeys.map((k) =>
        Object.entries(k).flatMap(([key, value]) => (value === undefined ? [] : [`${key}: ${tsLiteral(value)}`])),
      ),
      publicEntities: publicActions(bp).map((p) => tsLiteral(p, { indent: 2, trail: 1 })),
      userRecords: userRecords && {
        entity: userRecords.entity,
        properties: tsProperties(
          {
            store: code(`${lowerFirst(userRecords.entity)}Store`),
            loginField: userRecords.loginField,
            roleFields: userRecords.roleFields,
            ...(userRecords.nameField ? { nameField: userRecords.nameField } : {}),
          },
          6,
        ),
      },
    }),
  );
  if (authPages !== undefined) files.set('src/auth-pages.ts', authPages);
  const permissions = emitPermissions(bp);
  if (permissions !== undefined) files.set('src/permissions.ts', permissions);
  if (emailAuth) {
    files.set(
      'src/users.ts',
      render('app/src/users.ts.hbs', {
        userRecords: userRecords && {
          entity: userRecords.entity,
          file: entityFileName(bp.entities.find((e) => e.name === userRecords.entity) as Blueprint['entities'][number]),
          specName: `${lowerFirst(userRecords.entity)}Spec`,
          properties: tsProperties(
            {
              store: code(`new EntityStore(db, ${lowerFirst(userRecords.entity)}Spec, new AuditLog())`),
              loginField: userRecords.loginField,
              roleFields: userRecords.roleFields,
              ...(userRecords.nameField ? { nameField: userRecords.nameField } : {}),
            },
            2,
          ),
        },
      }),
    );
  }
  files.set('src/commands.ts', emitCommands(bp, options.outDir));
  files.set('src/skills.ts', emitSkills(bp));
  if (mcp) files.set('src/mcp.ts', emitMcp(bp, tools));
  if (workflows) files.set('src/workflows.ts', emitWorkflows(bp));
  for (const entity of bp.entities)
    files.set(`src/entities/${entityFileName(entity)}.ts`, emitEntityModule(bp, entity));
  // Wrapped into whole comment lines: the name's own line breaks cannot end the comment.
  const intro = wrapText(
    `The extension point of ${bp.project.name}: what your team adds to the generated app without editing a generated ` +
      'file. One default export, checked when the app starts (the contract: src/runtime/http/extension.ts):',
    117,
  );
  const scaffold = new Map([['src/extend.ts', render('app/src/extend.ts.hbs', { intro })]]);
  // The runtime the app's files import, the team's src/extend.ts included as it is on disk (once
  // scaffolded, it is theirs and may import more of the runtime than the scaffold does).
  const extend = path.join(options.outDir, 'src', 'extend.ts');
  const team = fs.statSync(extend, { throwIfNoEntry: false })?.isFile()
    ? new Map([['src/extend.ts', fs.readFileSync(extend, 'utf8')]])
    : new Map<string, string>();
  for (const [p, content] of emitRuntime(new Map([...files, ...scaffold]), team)) files.set(p, content);
  return { files: new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), scaffold };
}

/** The steps of every request, in order: trace, the team's middleware, webhook deliveries, credentials, the routes. */
function pipelineSteps(emailAuth: boolean, webhooks: boolean, plugins: boolean): string[] {
  const credentials = emailAuth
    ? ['auth.session', 'authenticate({ apiKeys, sessionActor: auth.sessionActor, delegate })', 'auth.csrf']
    : ['authenticate({ apiKeys, delegate })'];
  return [
    'tracing(traces, options.metrics)',
    '...(extend.middleware ?? [])',
    // The plugins' middleware, after yours: Zebric runs them before its routes, credentials unknown.
    ...(plugins ? ['pluginHost.middleware'] : []),
    ...(webhooks ? ['webhooks'] : []),
    ...credentials,
    'routing',
  ];
}
