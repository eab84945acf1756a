// Watching what the app is made of: the blueprint, the files it imports and the handlers and
// templates it names (every file the compiler read, so the set follows the blueprint as it
// changes), and the app's src/extend.ts. Bursts of events (an editor's save) become one change.

import { type FSWatcher, watch } from 'chokidar';

const SETTLE_MS = 20;

export class SourceWatcher {
  private readonly watcher: FSWatcher;
  private watched: Set<string>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    files: Iterable<string>,
    private readonly onChange: (file: string) => void,
  ) {
    this.watched = new Set(files);
    this.watcher = watch([...this.watched], { ignoreInitial: true });
    this.watcher.on('all', (_event, file) => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.onChange(file), SETTLE_MS);
    });
  }

  /** Watches exactly `files` from now on. */
  update(files: Iterable<string>): void {
    const next = new Set(files);
    const gone = [...this.watched].filter((f) => !next.has(f));
    const added = [...next].filter((f) => !this.watched.has(f));
    if (gone.length) this.watcher.unwatch(gone);
    if (added.length) this.watcher.add(added);
    this.watched = next;
  }

  /** Resolves once the watcher has started on every file. */
  ready(): Promise<void> {
    return new Promise((resolve) => this.watcher.once('ready', () => resolve()));
  }

  close(): Promise<void> {
    clearTimeout(this.timer);
    return this.watcher.close();
  }
}
