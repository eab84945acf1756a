/**
 * The databases a generated app runs on, chosen by DATABASE_URL at start (data/database.ts). The
 * SQL of both is the same text in most places; where it is not, code asks which one it writes for.
 */
export type Dialect = 'sqlite' | 'postgres';
