// The `bp` command line. User errors print as diagnostics without stack traces; exit codes:
// 0 success, 1 the blueprint (or the output folder) has problems, 2 usage errors.

import * as fs from 'node:fs';
import { Command, CommanderError } from 'commander';
import { validateBlueprint } from '../generator/compile.ts';
import { hasErrors } from '../generator/diagnostics.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { DevUsageError, runDevCommand, type DevCommandOptions } from './dev/command.ts';
import { BP_VERSION, consolePrinter, generateApp, printDiagnostics } from './generate.ts';

class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
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
  const code = await generateApp(blueprint, opts);
  if (code) throw new ExitCode(code);
}

function validate(blueprint: string): void {
  requireFile(blueprint);
  const { diagnostics } = validateBlueprint(blueprint, nodeSourceHost());
  printDiagnostics(diagnostics, consolePrinter);
  if (hasErrors(diagnostics)) throw new ExitCode(1);
  console.log(`${blueprint} is valid`);
}

async function dev(blueprint: string, opts: DevCommandOptions): Promise<void> {
  requireFile(blueprint);
  let code: number;
  try {
    code = await runDevCommand(blueprint, opts, consolePrinter);
  } catch (err) {
    if (!(err instanceof DevUsageError)) throw err;
    console.error(`bp dev: ${err.message}`);
    throw new ExitCode(2);
  }
  if (code) throw new ExitCode(code);
}

const program = new Command()
  .name('bp')
  .description('Compile a TOML application blueprint into a standalone TypeScript Express app.')
  .version(BP_VERSION, '-v, --version')
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

program
  .command('dev')
  .description(
    'Generate the app, run it, and on each save of the blueprint (or a file it uses) validate, regenerate, ' +
      'restart and reload the open pages; errors show in the terminal and in the pages. See docs/bp-dev.md.',
  )
  .argument('[blueprint]', 'the root .toml file', 'app.toml')
  .option('-o, --out <dir>', 'output folder (default: out/<blueprint name>)')
  .option('--port <n>', "the app's port; 0 picks a free one (default: PORT, else 3000)")
  .option('--admin-port <n>', "the admin server's port (the reload WebSocket too); 0 picks a free one", '3030')
  .option('--admin-host <host>', 'where the admin server listens: 127.0.0.1, localhost or ::1 only', '127.0.0.1')
  .option('--no-hot-reload', 'no watching, no reload script in the pages: generate, run and serve the admin server')
  .option(
    '--accept-data-loss',
    'apply destructive schema changes (a removed entity or field, a changed type) without asking',
  )
  .action(dev);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof ExitCode) process.exitCode = err.code;
  else if (err instanceof CommanderError) {
    const informational = ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code);
    process.exitCode = informational ? 0 : 2;
  } else throw err;
}
