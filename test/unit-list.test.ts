// `npm run test:unit` runs the test files listed in test/support/unit.mocharc.json: those that run
// in-process only (no child process, no generated app, no PostgreSQL, no browser), in well under a
// minute. This keeps the list honest both ways: a listed file that starts anything heavier fails
// here, and so does a file that would qualify but is missing from the list.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { ROOT } from './support/apps.ts';

/** What a unit test may not do: run the CLI or an app, reach a database server or a browser, start a process. */
const HEAVY = [
  /\b(startApp|bootFixture|generate|generateFresh|typecheck|bp|addUser)\(/,
  /\b(freshPostgresDatabase|databaseUrl|launchChromium)\(/,
  /from ['"]node:child_process['"]/,
  /from '\.\/support\/(postgres|databases|database-rows)\.ts'/,
];

/** In-process, yet left to the full run for their time, each with why. */
const SLOW: Record<string, string> = {
  'test/auth-email.test.ts': 'waits out real session timeouts: about 20 s',
};

const UNIT_CONFIG = path.join(ROOT, 'test', 'support', 'unit.mocharc.json');
const listed: string[] = JSON.parse(fs.readFileSync(UNIT_CONFIG, 'utf8')).spec;

function heavy(file: string): string | undefined {
  const source = fs.readFileSync(path.join(ROOT, file), 'utf8');
  return HEAVY.map((re) => source.match(re)?.[0]).find(Boolean);
}

describe('npm run test:unit', () => {
  it('lists only test files that exist and run in-process', () => {
    const wrong = listed.flatMap((file) => {
      if (!fs.existsSync(path.join(ROOT, file))) return [`${file}: no such file`];
      const found = heavy(file);
      return found ? [`${file}: ${found}`] : [];
    });
    expect(wrong).to.deep.equal([]);
  });

  it('lists every test file that runs in-process', () => {
    const all = fs
      .readdirSync(path.join(ROOT, 'test'))
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => `test/${f}`);
    const missing = all.filter((file) => !heavy(file) && !listed.includes(file) && !Object.hasOwn(SLOW, file));
    expect(missing).to.deep.equal([]);
  });

  it('finds an app started by a listed file', () => {
    const dir = fs.mkdtempSync(path.join(ROOT, 'test', '.tmp', 'unit-list-'));
    try {
      const file = path.relative(ROOT, path.join(dir, 'boots.test.ts'));
      const call = 'startApp'; // spelled apart, so that this file does not start an app by the same rule
      fs.writeFileSync(path.join(ROOT, file), `const app = await ${call}(appDir, env);\n`);
      expect(heavy(file)).to.equal(`${call}(`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
