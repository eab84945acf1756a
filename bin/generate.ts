// `bp generate`: compile a blueprint and write its app (or, with --check, compare the folder with
// what would be written). Apart from the command line's parsing so that the tests generate apps in
// process through the very code the CLI runs, without paying a CLI start for each app.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { compile } from '../generator/compile.ts';
import { hasErrors, renderDiagnostic, type Diagnostic } from '../generator/diagnostics.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { applyWrite, planWrite, readPreviousOutput } from '../generator/write/output.ts';

/** bp's version, written into each app's manifest (and printed by `bp --version`). */
export const BP_VERSION = (
  JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** Where a command's output goes: standard output and standard error, or a test's buffers. */
export interface Printer {
  out(text: string): void;
  err(text: string): void;
}

export const consolePrinter: Printer = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

export function printDiagnostics(diagnostics: readonly Diagnostic[], print: Printer): void {
  for (const d of diagnostics) print.err(`${renderDiagnostic(d)}\n`);
  const errors = diagnostics.filter((d) => d.severity === 'error').length;
  const warnings = diagnostics.length - errors;
  if (diagnostics.length) print.err(`${errors} error(s), ${warnings} warning(s)\n`);
}

/** Generates `blueprint` into `opts.out`; resolves to the exit code (0, or 1 when nothing was written). */
export async function generateApp(
  blueprint: string,
  opts: { out: string; check?: boolean },
  print: Printer = consolePrinter,
): Promise<number> {
  const outDir = path.resolve(opts.out);
  const result = await compile(blueprint, nodeSourceHost(), readPreviousOutput(outDir), outDir);
  printDiagnostics(result.diagnostics, print);
  if (!result.files || !result.scaffold || hasErrors(result.diagnostics)) {
    const shownDir = path.relative(process.cwd(), outDir) || '.';
    print.err(`nothing written: fix the errors above (${shownDir} is unchanged)\n`);
    return 1;
  }
  const { files, scaffold } = result;
  const plan = planWrite(outDir, files, scaffold);
  if (opts.check) {
    // Files the team owns (src/extend.ts) are never compared; a missing one is, since the app imports it.
    const stale = [...plan.write, ...plan.conflicts.map((c) => c.file)].sort();
    for (const file of stale) {
      const target = path.join(outDir, file);
      const current = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
      print.out(createTwoFilesPatch(`a/${file}`, `b/${file}`, current, files.get(file) as string));
    }
    for (const file of plan.scaffold) print.out(`missing file bp would create for you to edit: ${file}\n`);
    for (const file of plan.remove) print.out(`stale file bp would remove: ${file}\n`);
    const differ = stale.length + plan.scaffold.length + plan.remove.length;
    if (differ) {
      print.err(`${opts.out} is out of date: ${differ} file(s) differ from what bp generate writes now\n`);
      return 1;
    }
    const yours = plan.userOwned.length;
    print.out(`${opts.out} is up to date (${files.size} files, and ${yours} of yours left alone)\n`);
    return 0;
  }
  if (plan.conflicts.length) {
    for (const c of plan.conflicts) print.err(`${path.join(opts.out, c.file)} ${c.reason}\n`);
    print.err('nothing written: bp never overwrites files it does not own; move them away or restore them\n');
    return 1;
  }
  applyWrite(outDir, files, scaffold, plan, BP_VERSION);
  const removed = plan.remove.length ? `, ${plan.remove.length} removed` : '';
  const created = plan.scaffold.length ? `, created for you to edit: ${plan.scaffold.join(', ')}` : '';
  print.out(
    `generated ${opts.out}: ${plan.write.length} written, ${plan.unchanged.length} unchanged${removed}${created}\n`,
  );
  return 0;
}
