/**
 * Prisma's own schema engine, run offline as WebAssembly (@prisma/schema-engine-wasm), so that
 * bp's migration SQL is exactly what `prisma migrate diff --script` prints. The native engine
 * binary cannot be downloaded in bp's environments, and hand-written DDL would drift from what
 * Prisma Migrate expects to find in the database.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import * as wasmBindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { SchemaEngine } from '@prisma/schema-engine-wasm/schema_engine_bg';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { PrismaProvider } from '../prisma-providers.ts';
import { offlinePostgres } from './offline-postgres.ts';

export type { SchemaEngine };

/** The engine's code for "the Prisma schema failed validation" (user-facing error P1012). */
const SCHEMA_VALIDATION_ERROR = 'P1012';

/** Every diff considers all tables and enums bp's (no prisma.config.ts `tables.external`). */
const NO_EXTERNAL_ENTITIES = { externalTables: [], externalEnums: [] };

const NEXT_SCHEMA_PATH = 'schema.prisma';
/** A distinct name so that an error in the old schema points at it, not at the new one. */
const PREVIOUS_SCHEMA_PATH = 'previous/schema.prisma';

let bindingsReady: Promise<typeof wasmBindings> | undefined;

/**
 * The bindings keep the WebAssembly instance in module state, so it is instantiated once per
 * process (compiling the 5 MB module is most of the first call's cost); a failed attempt is
 * forgotten so that a later call can retry.
 */
function loadBindings(): Promise<typeof wasmBindings> {
  bindingsReady ??= instantiateBindings().catch((error: unknown) => {
    bindingsReady = undefined;
    throw error;
  });
  return bindingsReady;
}

async function instantiateBindings(): Promise<typeof wasmBindings> {
  // The package's main entry imports the .wasm file as an ES module, which Node cannot load;
  // its `_bg` glue module exposes the same API once handed an instance.
  const gluePath = createRequire(import.meta.url).resolve('@prisma/schema-engine-wasm/schema_engine_bg');
  const bytes = await readFile(gluePath.replace(/\.js$/, '.wasm'));
  const { instance } = await WebAssembly.instantiate(bytes, { './schema_engine_bg.js': wasmBindings });
  wasmBindings.__wbg_set_wasm(instance.exports);
  const start = instance.exports.__wbindgen_start;
  if (typeof start !== 'function') {
    throw new Error('@prisma/schema-engine-wasm: the module exports no __wbindgen_start');
  }
  start();
  return wasmBindings;
}

/**
 * Runs `use` with a fresh engine connected through Prisma's better-sqlite3 driver adapter to the
 * SQLite database `databaseUrl` (`:memory:` when the database does not matter, as for diffs between
 * two schema texts).
 */
export function withSchemaEngine<T>(databaseUrl: string, use: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  return withSchemaEngineVia(new PrismaBetterSqlite3({ url: databaseUrl }), use);
}

/**
 * Runs `use` with an engine for `provider` that needs no database: an in-memory SQLite one, or for
 * PostgreSQL an adapter that reaches no server (offline-postgres.ts), whose refusal, if the engine
 * asked it anything, becomes the error.
 */
async function withOfflineEngine<T>(provider: PrismaProvider, use: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  if (provider === 'sqlite') return withSchemaEngine(':memory:', use);
  const postgres = offlinePostgres();
  try {
    return await withSchemaEngineVia(postgres.factory, use);
  } catch (error) {
    const refused = postgres.refused();
    if (refused === undefined) throw error;
    throw new Error(`Prisma's schema engine wanted a PostgreSQL server, which bp does not use, to run: ${refused}`, {
      cause: error,
    });
  }
}

/**
 * Runs `use` with a fresh engine connected through the driver adapters `adapters` makes. The engine
 * never closes the connections it opens, so they are tracked and closed here: otherwise a SQLite
 * file would stay locked (the engine takes SQLite's exclusive locking mode).
 */
export async function withSchemaEngineVia<T>(
  adapters: SqlMigrationAwareDriverAdapterFactory,
  use: (engine: SchemaEngine) => Promise<T>,
): Promise<T> {
  const bindings = await loadBindings();
  const opened: SqlDriverAdapter[] = [];
  const track = async (connect: Promise<SqlDriverAdapter>): Promise<SqlDriverAdapter> => {
    const adapter = await connect;
    opened.push(adapter);
    return adapter;
  };
  const factory: SqlMigrationAwareDriverAdapterFactory = {
    provider: adapters.provider,
    adapterName: adapters.adapterName,
    connect: () => track(adapters.connect()),
    connectToShadowDb: () => track(adapters.connectToShadowDb()),
  };
  try {
    // The engine requires a factory bound to an error registry; an unbound one fails.
    const engine = await bindings.SchemaEngine.new(
      { datamodels: undefined },
      ignoreEngineLog,
      bindMigrationAwareSqlAdapterFactory(factory),
    );
    try {
      return await use(engine);
    } finally {
      engine.free();
    }
  } finally {
    await Promise.all(opened.map((adapter) => adapter.dispose()));
  }
}

/** The engine reports progress as JSON log lines; bp reports outcomes itself. */
function ignoreEngineLog(): void {}

/**
 * SQL that takes a database from `previousSchema` (null = empty database) to `nextSchema`, both
 * full Prisma schema texts of the same provider (their datasource's: "sqlite" or "postgresql").
 * Empty string when nothing changes. Uses Prisma's own schema engine (WASM), offline, never
 * hand-written DDL.
 */
export async function diffSchemas(previousSchema: string | null, nextSchema: string): Promise<string> {
  const provider = providerOf(nextSchema);
  const result = await withOfflineEngine(provider, (engine) =>
    engine.diff({
      // An empty database as Prisma Migrate finds one when it writes a first migration (its shadow
      // database): no tables, but the default schema exists. The engine's `empty` source has no
      // schema at all, so on PostgreSQL it would begin with CREATE SCHEMA "public", which needs
      // the CREATE privilege on the database even when the schema exists.
      from: {
        tag: 'schemaDatamodel',
        files: [{ path: PREVIOUS_SCHEMA_PATH, content: previousSchema ?? emptySchema(provider) }],
      },
      to: { tag: 'schemaDatamodel', files: [{ path: NEXT_SCHEMA_PATH, content: nextSchema }] },
      script: true,
      // Asks the engine to say whether the diff is empty (exit code 2 = changes), rather than
      // recognising its "-- This is an empty migration." placeholder text.
      exitCode: true,
      filters: NO_EXTERNAL_ENTITIES,
    }),
  ).catch((error: unknown) => {
    throw new Error(`Prisma's schema engine could not diff the schemas:\n${errorMessage(error)}`, { cause: error });
  });
  if (result.exitCode === 0 || result.stdout === null) return '';
  // One trailing newline and no trailing blanks: the same text whatever padding the engine adds.
  return `${trimLineEnds(result.stdout)}\n`;
}

/**
 * Prisma's validation of a schema text: [] when valid, else the engine's messages, one per error
 * (each with its `-->  schema.prisma:line` location and source excerpt). The schema engine has no
 * validate entry point, so this diffs the schema against an empty database, which runs the same
 * validation `prisma validate` does and fails with P1012 when the schema is invalid.
 */
export async function checkSchema(schema: string): Promise<string[]> {
  try {
    await withOfflineEngine(providerOf(schema), (engine) =>
      engine.diff({
        from: { tag: 'empty' },
        to: { tag: 'schemaDatamodel', files: [{ path: NEXT_SCHEMA_PATH, content: schema }] },
        script: false,
        exitCode: null,
        filters: NO_EXTERNAL_ENTITIES,
      }),
    );
    return [];
  } catch (error) {
    if (!(error instanceof Error) || (error as Error & { code?: unknown }).code !== SCHEMA_VALIDATION_ERROR)
      throw error;
    return error.message
      .split(/^(?=error: )/m)
      .map(trimLineEnds)
      .filter((message) => message !== '');
  }
}

/**
 * The provider a schema text's datasource block names. Anything but "postgresql" gets the SQLite
 * engine, which reports a provider it does not serve as a validation error.
 */
export function providerOf(schema: string): PrismaProvider {
  const datasource = /^datasource\s+\w+\s*\{([^}]*)\}/m.exec(schema)?.[1] ?? '';
  return /^\s*provider\s*=\s*"postgresql"\s*$/m.test(datasource) ? 'postgresql' : 'sqlite';
}

/** A schema with the datasource and nothing else: the model of an empty database. */
function emptySchema(provider: PrismaProvider): string {
  return `datasource db {\n  provider = "${provider}"\n}\n`;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function trimLineEnds(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .trimEnd();
}
