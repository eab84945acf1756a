/**
 * A PostgreSQL "connection" for Prisma's schema engine that reaches no server, so that bp writes the
 * PostgreSQL migrations offline, as it writes SQLite's.
 *
 * The engine's PostgreSQL connector connects as soon as it is created, whatever it is then asked:
 * it sends one probe (does the default schema exist, which server version is it) and, when told the
 * schema is missing, creates it. A diff between two schema texts sends nothing else: both sides are
 * computed from the texts (prisma-engines, schema-engine/connectors/sql-schema-connector/src/flavour/
 * postgres.rs, `setup_connection`; the version only tells CockroachDB apart and whether a live
 * database's tables may be partitioned, which only matters when describing one). This adapter
 * answers that probe (the schema exists; a PostgreSQL that is not CockroachDB) and refuses any
 * other statement, so an engine that ever needed a real database fails loudly instead of writing
 * SQL from made-up answers. test/postgres-migrations.test.ts checks that the SQL equals what the
 * engine writes connected to a real server.
 */
import { ColumnTypeEnum } from '@prisma/driver-adapter-utils';
import type {
  SqlDriverAdapter,
  SqlMigrationAwareDriverAdapterFactory,
  SqlQuery,
  SqlResultSet,
} from '@prisma/driver-adapter-utils';

/** The engine's connection probe, exactly as its PostgreSQL connector sends it. */
const PROBE =
  'SELECT EXISTS(SELECT 1 FROM pg_namespace WHERE nspname = $1), version(), ' +
  "current_setting('server_version_num')::integer as numeric_version;";

const PROBE_ANSWER: SqlResultSet = {
  columnNames: ['exists', 'version', 'numeric_version'],
  columnTypes: [ColumnTypeEnum.Boolean, ColumnTypeEnum.Text, ColumnTypeEnum.Int32],
  rows: [[true, 'PostgreSQL (no server: bp diffs schema texts offline)', 0]],
};

export interface OfflinePostgres {
  factory: SqlMigrationAwareDriverAdapterFactory;
  /** The first statement the engine sent that this adapter refused, if any. */
  refused(): string | undefined;
}

export function offlinePostgres(): OfflinePostgres {
  let refusedSql: string | undefined;
  const refuse = (sql: string): never => {
    refusedSql ??= sql;
    throw new Error(`bp runs Prisma's schema engine without a PostgreSQL server, and the engine sent: ${sql}`);
  };
  const adapter: SqlDriverAdapter = {
    provider: 'postgres',
    adapterName: 'bp-offline-postgres',
    queryRaw: async (query: SqlQuery) => (query.sql === PROBE ? PROBE_ANSWER : refuse(query.sql)),
    executeRaw: async (query: SqlQuery) => refuse(query.sql),
    executeScript: async (script: string) => refuse(script),
    startTransaction: async () => refuse('BEGIN'),
    getConnectionInfo: () => ({ supportsRelationJoins: true }),
    dispose: async () => {},
  };
  return {
    factory: {
      provider: 'postgres',
      adapterName: adapter.adapterName,
      connect: async () => adapter,
      connectToShadowDb: async () => adapter,
    },
    refused: () => refusedSql,
  };
}
