// The app's code for bp dev: one esbuild context kept warm for the whole session, so a rebuild
// after a save costs only what changed (tens of milliseconds, against about 0.5 s for the app's own
// `npm run build` in a fresh process, or about 1 s to start through tsx; docs/bp-dev.md). The
// options are those of the app's scripts/build.js; the output is dist/dev-server.js, one level
// below the app folder as dist/server.js is (the server finds the app folder from its own path),
// and never touches what `npm run build` records.

import * as fs from 'node:fs';
import * as esbuild from 'esbuild';

export const DEV_ENTRY = 'dist/dev-server.js';

export class AppBuild {
  /** The packages the built app imports at its start (not those it imports when needed), from the last build. */
  packages: string[] = [];

  private constructor(private readonly context: esbuild.BuildContext) {}

  static async create(appDir: string): Promise<AppBuild> {
    const context = await esbuild.context({
      absWorkingDir: fs.realpathSync(appDir),
      entryPoints: { 'dev-server': 'src/server.ts' },
      outdir: 'dist',
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      // Handlers import their contract as 'bp/runtime' (tsconfig.json paths): this app's own copy.
      alias: { 'bp/runtime': './src/runtime/commands/handler.ts' },
      sourcemap: true,
      metafile: true,
      logLevel: 'silent',
    });
    return new AppBuild(context);
  }

  /** Builds again; resolves to esbuild's errors as printed text, or undefined when it built. */
  async rebuild(): Promise<string | undefined> {
    try {
      const result = await this.context.rebuild();
      const imports = Object.values(result.metafile?.outputs ?? {}).flatMap((o) => o.imports);
      const external = imports.filter(
        (i) => i.external && i.kind === 'import-statement' && !i.path.startsWith('node:'),
      );
      this.packages = [...new Set(external.map((i) => i.path))].sort();
      return undefined;
    } catch (err) {
      const errors = (err as { errors?: esbuild.Message[] }).errors;
      if (!errors?.length) return err instanceof Error ? err.message : String(err);
      const text = await esbuild.formatMessages(errors, { kind: 'error', color: false });
      return text.join('').trimEnd();
    }
  }

  dispose(): Promise<void> {
    return this.context.dispose();
  }
}
