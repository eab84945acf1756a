// The `bp` command line. User errors print as diagnostics without stack traces; exit codes:
// 0 success, 1 the blueprint (or the output folder) has problems, 2 usage errors.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, CommanderError } from 'commander';
import { createTwoFilesPatch } from 'diff';
import { compile, validateBlueprint } from '../generator/compile.ts';
import { hasErrors, renderDiagnostic, type Diagnostic } from '../generator/diagnostics.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { applyWrite, planWrite, readPreviousOutput } from '../generator/write/output.ts';

const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

function printDiagnostics(diagnostics: readonly Diagnostic[]): void {
  for (const d of diagnostics) console.error(renderDiagnostic(d));
  const errors = diagnostics.filter((d) => d.severity === 'error').length;
  const warnings = diagnostics.length - errors;
  if (diagnostics.length) console.error(`${errors} error(s), ${warnings} warning(s)`);
}

function requireFile(file: string): void {
  if (!fs.existsSync(file)) {
    console.error(`bp: blueprint ${file} not found`);
    throw new ExitCode(2);
  }
  if (!fs.statSync(file).isFile()) {
    console.error(`bp: blueprint ${file} is not a file`);
    throw new ExitCode(2);
  }
}

async function generate(blueprint: string, opts: { out: string; check?: boolean }): Promise<void> {
  requireFile(blueprint);
  const outDir = path.resolve(opts.out);
  const result = await compile(blueprint, nodeSourceHost(), readPreviousOutput(outDir), outDir);
  printDiagnostics(result.diagnostics);
  if (!result.files || !result.scaffold || hasErrors(result.diagnostics)) {
    console.error(
      `nothing written: fix the errors above (${path.relative(process.cwd(), outDir) || '.'} is unchanged)`,
    );
    throw new ExitCode(1);
  }
  const { files, scaffold } = result;
  const plan = planWrite(outDir, files, scaffold);
  if (opts.check) {
    // Files the team owns (src/extend.ts) are never compared; a missing one is, since the app imports it.
    const stale = [...plan.write, ...plan.conflicts.map((c) => c.file)].sort();
    for (const file of stale) {
      const target = path.join(outDir, file);
      const current = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
      process.stdout.write(createTwoFilesPatch(`a/${file}`, `b/${file}`, current, files.get(file) as string));
    }
    for (const file of plan.scaffold) console.log(`missing file bp would create for you to edit: ${file}`);
    for (const file of plan.remove) console.log(`stale file bp would remove: ${file}`);
    const differ = stale.length + plan.scaffold.length + plan.remove.length;
    if (differ) {
      console.error(`${opts.out} is out of date: ${differ} file(s) differ from what bp generate writes now`);
      throw new ExitCode(1);
    }
    console.log(`${opts.out} is up to date (${files.size} files, and ${plan.userOwned.length} of yours left alone)`);
    return;
  }
  if (plan.conflicts.length) {
    for (const c of plan.conflicts) console.error(`${path.join(opts.out, c.file)} ${c.reason}`);
    console.error('nothing written: bp never overwrites files it does not own; move them away or restore them');
    throw new ExitCode(1);
  }
  applyWrite(outDir, files, scaffold, plan, pkg.version);
  const removed = plan.remove.length ? `, ${plan.remove.length} removed` : '';
  const created = plan.scaffold.length ? `, created for you to edit: ${plan.scaffold.join(', ')}` : '';
  console.log(
    `generated ${opts.out}: ${plan.write.length} written, ${plan.unchanged.length} unchanged${removed}${created}`,
  );
}

function validate(blueprint: string): void {
  requireFile(blueprint);
  const { diagnostics } = validateBlueprint(blueprint, nodeSourceHost());
  printDiagnostics(diagnostics);
  if (hasErrors(diagnostics)) throw new ExitCode(1);
  console.log(`${blueprint} is valid`);
}

const program = new Command()
  .name('bp')
  .description('Compile a TOML application blueprint into a standalone TypeScript Express app.')
  .version(pkg.version, '-v, --version')
  .exitOverride()
  .showHelpAfterError('(run bp --help for usage)');

program
  .command('validate')
  .description('Check a blueprint and print every problem at once (exit 1 when it has errors).')
  .argument('<blueprint>', 'the root .toml file')
  .action(validate);

program
  .command('generate')
  .description('Generate the app for a blueprint into a folder (never overwrites files bp did not write).')
  .argument('<blueprint>', 'the root .toml file')
  .requiredOption('-o, --out <dir>', 'output folder')
  .option('--check', 'write nothing; exit 1 and print a diff when the folder differs from what would be generated')
  .action(generate);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof ExitCode) process.exitCode = err.code;
  else if (err instanceof CommanderError) {
    const informational = ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code);
    process.exitCode = informational ? 0 : 2;
  } else throw err;
}
