// Migration SQL is laid out to 120 columns (generator/emit/migrations/layout.ts) without changing
// what it does: the wrapped script builds the same tables, with the same literals, on real SQLite.

import Database from 'better-sqlite3';
import { expect } from 'chai';
import { wrapSqlLines } from '../generator/emit/migrations/layout.ts';

const columns = Array.from({ length: 14 }, (_, i) => `"column_number_${i}"`);
const SCRIPT = [
  '-- CreateTable',
  'CREATE TABLE "Parent" ("id" TEXT NOT NULL PRIMARY KEY);',
  'CREATE TABLE "Thing" (',
  '    "id" TEXT NOT NULL PRIMARY KEY, ' +
    `"note" TEXT NOT NULL DEFAULT 'a  literal,  with   spaces that must stay exactly as written', ` +
    '"parentId" TEXT,',
  ...columns.map((c) => `    ${c} TEXT,`),
  '    CONSTRAINT "Thing_parentId_fkey" FOREIGN KEY ("parentId") REFERENCES "Parent" ("id") ' +
    'ON DELETE SET NULL ON UPDATE CASCADE',
  ');',
  `-- ${'a comment that goes on and on '.repeat(6)}`,
  'CREATE TABLE "new_Thing" ("id" TEXT NOT NULL PRIMARY KEY, "note" TEXT, ' +
    columns.map((c) => `${c} TEXT`).join(', ') +
    ');',
  `INSERT INTO "Parent" ("id") VALUES ('p 1');`,
  `INSERT INTO "Thing" ("id", "parentId", ${columns.join(', ')}) ` +
    `VALUES ('t''1', 'p 1', ${columns.map((_, i) => `'v ${i}'`).join(', ')});`,
  `INSERT INTO "new_Thing" ("id", "note", ${columns.join(', ')}) ` +
    `SELECT "id", "note", ${columns.join(', ')} FROM "Thing";`,
].join('\n');

function run(sql: string): { tables: unknown; rows: unknown } {
  const db = new Database(':memory:');
  db.exec(sql);
  const names = ['Parent', 'Thing', 'new_Thing'];
  const tables = names.map((t) => db.prepare(`SELECT * FROM pragma_table_info('${t}')`).all());
  const keys = db.prepare(`SELECT * FROM pragma_foreign_key_list('Thing')`).all();
  const rows = names.map((t) => db.prepare(`SELECT * FROM "${t}"`).all());
  db.close();
  return { tables: [tables, keys], rows };
}

describe('migration SQL layout', () => {
  it('breaks every long line to 120 columns, before clauses where it can', () => {
    const wrapped = wrapSqlLines(SCRIPT);
    expect(SCRIPT.split('\n').some((l) => l.length > 120)).to.equal(true);
    for (const line of wrapped.split('\n')) expect(line.length, line).to.be.at.most(120);
    expect(wrapped).to.include('ON DELETE SET NULL\n        ON UPDATE CASCADE');
    expect(wrapped).to.match(/\n {4}SELECT "id"/);
    for (const line of wrapped.split('\n').filter((l) => l.includes('on and on'))) expect(line).to.match(/^-- /);
  });

  it('builds the same tables, keys and rows as the unwrapped script, literals untouched', () => {
    const wrapped = wrapSqlLines(SCRIPT);
    expect(wrapped).to.include("'a  literal,  with   spaces that must stay exactly as written'");
    expect(run(wrapped)).to.deep.equal(run(SCRIPT));
  });

  it('leaves short lines as they are', () => {
    const short = 'CREATE TABLE "A" ("id" TEXT NOT NULL PRIMARY KEY);\n-- done\n';
    expect(wrapSqlLines(short)).to.equal(short);
  });
});
