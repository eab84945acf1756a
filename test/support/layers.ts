// Import direction checks: a source tree's units (its top-level folders and files) and, for each,
// the units and outside folders it may import. Used by test/generator-layers.test.ts.

import * as fs from 'node:fs';
import * as path from 'node:path';

/** Unit -> what it may import: other units by name, or folders outside the tree as `../x/y`. */
export type Layers = Record<string, string[]>;

const posix = (p: string): string => p.split(path.sep).join('/');

/** Every relative import in `root`'s .ts files that its unit may not make, as "<file> imports <target>". */
export function importViolations(root: string, layers: Layers): string[] {
  const files = (fs.readdirSync(root, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) =>
    f.endsWith('.ts'),
  );
  const violations: string[] = [];
  for (const file of files.map(posix).sort()) {
    const unit = file.split('/')[0];
    const allowed = layers[unit] ?? [];
    const source = fs.readFileSync(path.join(root, file), 'utf8');
    for (const [, spec] of source.matchAll(/from '(\.[^']+)'/g)) {
      const target = posix(path.relative(root, path.resolve(path.dirname(path.join(root, file)), spec)));
      const ok = target.startsWith('../')
        ? allowed.some((outside) => outside.startsWith('../') && target.startsWith(`${outside}/`))
        : target.split('/')[0] === unit || allowed.includes(target.split('/')[0]);
      if (!ok) violations.push(`${file} imports ${target}`);
    }
  }
  return violations;
}
