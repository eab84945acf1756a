// Emit stage: the whole generated app as a map of relative path -> contents. Writes nothing.

import type { Blueprint } from '../model/types.ts';
import { emitCommands } from './commands.ts';
import { emitEntityModule, entityFileName, routesName } from './entities.ts';
import { lowerFirst } from './relations.ts';
import { emitMigrations, type PreviousOutput } from './migrations.ts';
import { emitOpenApi } from './openapi.ts';
import { emitPermissions } from './permissions.ts';
import { emitPrismaSchema } from './prisma-schema.ts';
import { emitRuntime } from './runtime.ts';
import { render } from './templates.ts';
import { tsLiteral } from './ts-literal.ts';

/** Versions the generated app depends on: the ones bp itself is built and tested with. */
export const APP_DEPENDENCIES: Record<string, string> = {
  '@prisma/adapter-better-sqlite3': '7.10.0',
  '@prisma/client': '7.10.0',
  'better-sqlite3': '^12.6.0',
  'csrf-sync': '^4.2.1',
  express: '^5.3.0',
  'express-session': '^1.19.0',
  tsx: '^4.23.0',
};
export const APP_DEV_DEPENDENCIES: Record<string, string> = {
  '@types/better-sqlite3': '^9.6.0',
  '@types/express': '^5.0.6',
  '@types/express-session': '^1.18.2',
  '@types/node': '^20.19.43',
  prisma: '7.10.1',
  typescript: '^5.9.3',
};

export interface EmitOptions {
  /** The blueprint path as shown in the generated README. */
  blueprintName: string;
  /** Absolute output folder: generated code imports user handlers relative to it. */
  outDir: string;
  previous: PreviousOutput;
}

export async function emitApp(bp: Blueprint, options: EmitOptions): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const schema = emitPrismaSchema(bp);
  const entities = bp.entities.map((e) => ({
    name: e.name,
    collection: e.collection,
    file: entityFileName(e),
    routesName: routesName(e),
    specName: `${lowerFirst(e.name)}Spec`,
    storeName: `${lowerFirst(e.name)}Store`,
  }));
  const deps = (table: Record<string, string>) => Object.entries(table).map(([name, version]) => ({ name, version }));
  const emailAuth = bp.auth.providers.includes('email');

  files.set('package.json', render('app/package.json.hbs', {
    slug: bp.slug,
    version: bp.project.version,
    description: bp.project.description ?? '',
    emailAuth,
    dependencies: deps(APP_DEPENDENCIES),
    devDependencies: deps(APP_DEV_DEPENDENCIES),
  }));
  files.set('tsconfig.json', render('app/tsconfig.json.hbs', {}));
  files.set('.gitignore', render('app/gitignore.hbs', {}));
  files.set('README.md', render('app/README.md.hbs', {
    name: bp.project.name,
    description: bp.project.description ?? '',
    blueprint: options.blueprintName,
    emailAuth,
    loginPath: bp.auth.loginPath,
    entities,
  }));
  files.set('prisma.config.ts', render('app/prisma.config.ts.hbs', {}));
  files.set('prisma/schema.prisma', schema);
  for (const [p, content] of await emitMigrations(schema, options.previous)) files.set(p, content);
  files.set('openapi.json', emitOpenApi(bp));
  files.set('src/server.ts', render('app/src/server.ts.hbs', { name: bp.project.name }));
  files.set('src/app.ts', render('app/src/app.ts.hbs', {
    entities,
    emailAuth,
    slug: bp.slug,
    title: bp.project.name,
    loginPath: bp.auth.loginPath,
    trustedOrigins: bp.auth.trustedOrigins,
    signup: bp.auth.signup,
    sessionDuration: bp.auth.session.duration,
    idleTimeout: bp.auth.session.idleTimeout,
    apiKeys: bp.auth.apiKeys.map((k) => tsLiteral(k)),
  }));
  files.set('src/permissions.ts', emitPermissions(bp));
  if (emailAuth) files.set('src/users.ts', render('app/src/users.ts.hbs', {}));
  files.set('src/commands.ts', emitCommands(bp, options.outDir));
  for (const entity of bp.entities) files.set(`src/entities/${entityFileName(entity)}.ts`, emitEntityModule(bp, entity));
  for (const [p, content] of emitRuntime()) files.set(p, content);
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
