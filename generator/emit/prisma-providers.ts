// The databases a generated app runs on, each with its own Prisma schema and migration history:
// Prisma Migrate binds a migrations folder to one provider (migration_lock.toml), and the SQL of
// each dialect differs. The app picks one by DATABASE_URL when it starts.

export type PrismaProvider = 'sqlite' | 'postgresql';

export const PRISMA_PROVIDERS: readonly PrismaProvider[] = ['sqlite', 'postgresql'];

/**
 * The folder of each provider's schema.prisma and migrations/, relative to the app. SQLite's is
 * `prisma/`, where apps generated before PostgreSQL was supported committed their history.
 */
export const PRISMA_DIR: Record<PrismaProvider, string> = { sqlite: 'prisma', postgresql: 'prisma/postgres' };
