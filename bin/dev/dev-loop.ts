// `bp dev`: generate, run the app as a child process, watch its sources; on each save validate,
// then either show the diagnostics (the running app keeps serving), hold a destructive schema
// change until the developer confirms it, or regenerate, rebuild, restart and reload the pages.
// One save is handled at a time; saves made meanwhile are handled once, after it.

import * as path from 'node:path';
import { validateBlueprint } from '../../generator/compile.ts';
import { type Diagnostic, hasErrors } from '../../generator/diagnostics.ts';
import { describeBreaking, type SchemaDiff, schemaDiff } from '../../generator/model/schema-diff.ts';
import type { Blueprint } from '../../generator/model/types.ts';
import { generateApp, type Printer, printDiagnostics } from '../generate.ts';
import { startAdminServer } from './admin-server.ts';
import { AppBuild } from './app-build.ts';
import { installPackages, missingPackages } from './app-packages.ts';
import { type AppProcess, launchAppProcess, stopAppProcess } from './app-process.ts';
import { freePort } from './free-port.ts';
import { LiveChannel } from './live-channel.ts';
import { urlHost } from './loopback.ts';
import { recordingSourceHost } from './source-files.ts';
import { Terminal } from './terminal.ts';
import { SourceWatcher } from './watch.ts';

export interface DevOptions {
  blueprint: string;
  out: string;
  /** The app's port; 0: a free one, chosen once. */
  port: number;
  adminHost: string;
  adminPort: number;
  hotReload: boolean;
  /** Apply destructive schema changes without asking. */
  acceptDataLoss: boolean;
}

type AppState = 'starting' | 'running' | 'restarting' | 'failed' | 'exited' | 'stopped';

/** How long after an app starts its spare is launched at the latest (app-process.ts), when pages do not reconnect. */
const SPARE_DELAY_MS = 2000;
const CONFIRM_HINT = 'type y and Enter in the bp dev terminal to apply it, or revert the blueprint to keep the data';

/** A Printer that keeps what it is given. */
function bufferPrinter(): Printer & { text(): string } {
  let text = '';
  return { out: (t) => void (text += t), err: (t) => void (text += t), text: () => text };
}

export class DevLoop {
  private readonly terminal: Terminal;
  private readonly live: LiveChannel | undefined;
  private readonly outDir: string;
  private appPort = 0;
  private appAdminPort = 0;
  private adminPort = 0;
  private admin: Awaited<ReturnType<typeof startAdminServer>> | undefined;
  private build: AppBuild | undefined;
  private watcher: SourceWatcher | undefined;
  private app: AppProcess | undefined;
  /** The next app's process, its packages loaded, waiting to be started by the next save. */
  private spare: AppProcess | undefined;
  private appState: AppState = 'starting';
  /** The model the running app was generated from. */
  private applied: Blueprint | undefined;
  private lastChange: { diff: SchemaDiff; at: string } | undefined;
  private pending: { diff: SchemaDiff; at: string } | undefined;
  private diagnostics: Diagnostic[] = [];
  private shownWarnings = '';
  private wanted: { confirmed: boolean } | undefined;
  private running: Promise<void> | undefined;
  private stopping = false;

  constructor(
    private readonly options: DevOptions,
    print: Printer,
  ) {
    this.terminal = new Terminal(print);
    this.live = options.hotReload ? new LiveChannel() : undefined;
    this.outDir = path.resolve(options.out);
  }

  /** Starts everything; resolves to false when the first generation failed without hot reload. */
  async start(): Promise<boolean> {
    this.appPort = this.options.port === 0 ? await freePort() : this.options.port;
    this.appAdminPort = await freePort();
    this.admin = await startAdminServer(
      {
        schemaDiff: () => this.schemaDiffBody(),
        devState: () => this.devState(),
        appAdminPort: () => (this.appState === 'running' ? this.appAdminPort : undefined),
        appDown: (refused) => {
          if (this.appState === 'restarting' || this.appState === 'starting') {
            return { code: 'APP_RESTARTING', message: 'the app is restarting; try again in a moment' };
          }
          if (refused && this.appState === 'running') {
            return {
              code: 'APP_ADMIN_UNAVAILABLE',
              message: 'the app runs, but its admin server (ADMIN_PORT) does not answer',
            };
          }
          return {
            code: 'APP_NOT_RUNNING',
            message: `the app is not running (${this.appState}); see the bp dev terminal`,
          };
        },
        live: this.live,
      },
      this.options.adminHost,
      this.options.adminPort,
    );
    this.adminPort = this.admin.port;
    this.terminal.say(`app: http://localhost:${this.appPort}`);
    this.terminal.say(`admin: http://${urlHost(this.options.adminHost)}:${this.adminPort}`);
    // Tracked as any save is, so that a Ctrl-C now waits for it rather than racing its app's start.
    const first = this.cycle(false);
    this.running = first.then(() => undefined);
    const files = await first;
    this.running = undefined;
    if (this.stopping) return true;
    if (!this.options.hotReload) return this.appState === 'running';
    this.watcher = new SourceWatcher(files, () => this.schedule(false));
    await this.watcher.ready();
    this.terminal.listen(() => {
      if (this.pending) this.schedule(true);
      else this.terminal.say('no destructive change is waiting for confirmation');
    });
    this.terminal.say(`watching ${this.options.blueprint} and the files it uses`);
    return true;
  }

  /** Stops the watcher, the app, the servers; waits for the save being handled. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wanted = undefined;
    await this.watcher?.close();
    this.terminal.close();
    await this.running;
    await Promise.all([this.app, this.spare].map((p) => p && stopAppProcess(p.process)));
    this.appState = 'stopped';
    await this.live?.close();
    if (this.admin) {
      const { server } = this.admin;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await this.build?.dispose();
  }

  private schedule(confirmed: boolean): void {
    if (this.stopping) return;
    this.wanted = { confirmed: confirmed || (this.wanted?.confirmed ?? false) };
    if (this.running) return;
    this.running = (async () => {
      while (this.wanted && !this.stopping) {
        const { confirmed: yes } = this.wanted;
        this.wanted = undefined;
        const files = await this.cycle(yes);
        this.watcher?.update(files);
      }
      this.running = undefined;
    })();
  }

  /** Handles one save; resolves to the files to watch from now on. */
  private async cycle(confirmed: boolean): Promise<string[]> {
    const started = performance.now();
    // Where the time of a save goes, printed with "app ready" (and read by the bench).
    const steps: string[] = [];
    let stepStart = started;
    const step = (name: string) => {
      const now = performance.now();
      steps.push(`${name} ${Math.round(now - stepStart)}`);
      stepStart = now;
    };
    const { host, read } = recordingSourceHost();
    const blueprint = path.resolve(this.options.blueprint);
    const { model, diagnostics } = validateBlueprint(blueprint, host);
    const files = [blueprint, ...read, path.join(this.outDir, 'src', 'extend.ts')];
    this.diagnostics = diagnostics;
    step('validate');
    const printed = bufferPrinter();
    printDiagnostics(diagnostics, printed);
    if (!model || hasErrors(diagnostics)) {
      this.shownWarnings = '';
      this.terminal.print.err(printed.text());
      this.terminal.warn('the blueprint has errors: the app keeps serving its last good version');
      this.live?.show({
        kind: 'diagnostics',
        title: 'The blueprint has errors: the app keeps serving its last good version',
        text: printed.text(),
      });
      return files;
    }
    if (printed.text() !== this.shownWarnings) this.terminal.print.err(printed.text());
    this.shownWarnings = printed.text();
    const diff = this.applied ? schemaDiff(this.applied, model) : undefined;
    if (diff?.hasBreakingChanges && !this.options.acceptDataLoss) {
      const same = this.pending && JSON.stringify(this.pending.diff) === JSON.stringify(diff);
      if (!(confirmed && same)) {
        this.holdDestructive(diff, same ? this.pending?.at : undefined);
        return files;
      }
    }
    if (this.pending) this.terminal.say('the destructive change waiting for confirmation is gone from the blueprint');
    this.pending = undefined;
    const generated = bufferPrinter();
    const code = await generateApp(this.options.blueprint, { out: this.options.out }, generated);
    if (code !== 0) {
      this.terminal.print.err(generated.text());
      this.live?.show({ kind: 'error', title: 'bp could not write the app', text: generated.text() });
      return files;
    }
    step('generate');
    this.terminal.say(generated.text().trimEnd().split('\n').pop() ?? 'generated');
    this.applied = model;
    if (diff?.hasChanges) this.lastChange = { diff, at: new Date().toISOString() };
    if (!(await this.packagesInstalled())) return files;
    step('packages');
    this.build ??= await AppBuild.create(this.outDir);
    const buildErrors = await this.build.rebuild();
    step('build');
    if (buildErrors !== undefined) {
      this.terminal.print.err(`${buildErrors}\n`);
      this.terminal.warn('the app does not build: the running app keeps serving');
      this.live?.show({ kind: 'error', title: 'The app does not build', text: buildErrors });
      return files;
    }
    if (this.stopping) return files;
    if (await this.restart(step)) {
      const total = Math.round(performance.now() - started);
      this.terminal.say(`app ready in ${total} ms (pid ${this.app?.process.pid}; ${steps.join(', ')} ms)`);
    }
    return files;
  }

  /** Installs what the app depends on and Node would not find; false (and said) when that fails. */
  private async packagesInstalled(): Promise<boolean> {
    const missing = missingPackages(this.outDir);
    if (!missing.length) return true;
    this.terminal.say(`installing the app's packages (npm install in ${this.options.out}): ${missing.join(', ')}`);
    if (await installPackages(this.outDir, (text) => this.terminal.print.err(text))) return true;
    const text = `npm install failed in ${this.options.out}: run it there, then save a file to start the app`;
    this.terminal.warn(text);
    this.live?.show({ kind: 'error', title: "The app's packages could not be installed", text });
    return false;
  }

  private holdDestructive(diff: SchemaDiff, since: string | undefined): void {
    const first = this.pending === undefined || since === undefined;
    this.pending = { diff, at: since ?? new Date().toISOString() };
    const lines = describeBreaking(diff);
    const text = `${lines.map((l) => `  ${l}`).join('\n')}\n\nTo apply it: ${CONFIRM_HINT}.`;
    if (first) {
      this.terminal.warn(`this change loses data, and is not applied until you confirm it:\n${text}`);
      this.terminal.warn('the app keeps serving the previous version meanwhile');
    }
    this.live?.show({
      kind: 'destructive',
      title: 'Destructive schema change waiting for confirmation: the app keeps serving the previous version',
      text,
    });
  }

  /** The child's environment: the app's port, its admin server's, and where pages find the reload channel. */
  private appEnv(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(this.appPort),
      ADMIN_PORT: String(this.appAdminPort),
    };
    if (this.live) env.BP_LIVE_RELOAD_PORT = String(this.adminPort);
    else delete env.BP_LIVE_RELOAD_PORT;
    return env;
  }

  private launch(): AppProcess {
    return launchAppProcess(this.outDir, this.appEnv(), this.build?.packages ?? [], (text) =>
      this.terminal.print.out(text),
    );
  }

  /**
   * Replaces the running app by the warm spare process (app-process.ts), or a new one; true when it
   * listens. Then launches the next spare, which loads its packages while the developer edits.
   */
  private async restart(step: (name: string) => void): Promise<boolean> {
    this.appState = this.app ? 'restarting' : 'starting';
    if (this.app) await stopAppProcess(this.app.process);
    step('stop');
    const spare = this.spare;
    this.spare = undefined;
    const app = spare && !spare.exited() ? spare : this.launch();
    this.app = app;
    app.process.once('exit', (code, signal) => {
      if (this.app !== app || this.stopping || this.appState === 'restarting') return;
      this.appState = 'exited';
      this.terminal.warn(`the app exited (${signal ?? `code ${code}`}); save a file to start it again`);
    });
    try {
      await app.start();
      step('start');
      this.appState = 'running';
      this.live?.clear();
      // Not before the pages have reloaded from the new app: its start would compete with theirs.
      if (this.live) {
        void this.live.reload(SPARE_DELAY_MS).then(() => {
          if (!this.stopping && this.app === app && !this.spare) this.spare = this.launch();
        });
      }
      return true;
    } catch (err) {
      this.appState = 'failed';
      const text = err instanceof Error ? err.message : String(err);
      this.terminal.warn(`the app did not start; save a file to try again`);
      this.live?.show({ kind: 'error', title: 'The app did not start', text });
      return false;
    }
  }

  private schemaDiffBody(): object | null {
    if (this.pending) return { ...this.pending.diff, status: 'pending', since: this.pending.at, confirm: CONFIRM_HINT };
    if (this.lastChange) return { ...this.lastChange.diff, status: 'applied', at: this.lastChange.at };
    return null;
  }

  private devState(): object {
    return {
      blueprint: this.options.blueprint,
      valid: !hasErrors(this.diagnostics),
      diagnostics: this.diagnostics,
      app: this.appState,
      appUrl: `http://localhost:${this.appPort}`,
      hotReload: this.options.hotReload,
      livePages: this.live?.clients ?? 0,
      pendingSchemaChange: this.pending ? this.schemaDiffBody() : null,
    };
  }
}
