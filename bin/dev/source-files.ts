// The compiler's view of the file system for bp dev: the real one, recording each file it read
// (the blueprint, its imports, handlers, templates), which is what the watcher must follow.

import { nodeSourceHost, type SourceHost } from '../../generator/source.ts';

export function recordingSourceHost(): { host: SourceHost; read: Set<string> } {
  const inner = nodeSourceHost();
  const read = new Set<string>();
  const host: SourceHost = {
    readFile(absPath) {
      const text = inner.readFile(absPath);
      if (text !== undefined) read.add(absPath);
      return text;
    },
    realPath: (absPath) => inner.realPath(absPath),
    display: (absPath) => inner.display(absPath),
  };
  return { host, read };
}
