// The generated OpenAPI documents pass two independent validators: @readme/openapi-parser
// (schema validation of the document) and Redocly's linter.

import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { expect } from 'chai';
import { ROOT } from './support/apps.ts';
import { GOLDEN_DIR, GOLDEN_FIXTURES } from './support/goldens.ts';

describe('generated OpenAPI documents', function () {
  this.timeout(60_000);
  for (const name of Object.keys(GOLDEN_FIXTURES)) {
    const file = path.join(GOLDEN_DIR, name, 'tree', 'openapi.json');

    it(`${name}: valid OpenAPI 3.1 for @readme/openapi-parser`, async () => {
      const result = await validate(file);
      expect(result.valid, JSON.stringify('errors' in result ? result.errors : [], null, 2)).to.equal(true);
    });

    it(`${name}: clean under redocly lint --extends=minimal`, () => {
      const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js'), 'lint', '--extends=minimal', '--format=json', file], {
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      expect(r.status, r.stderr).to.equal(0);
      const report = JSON.parse(r.stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string }> };
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).to.deep.equal([]);
      expect(report.totals).to.include({ errors: 0, warnings: 0 });
    });
  }
});
