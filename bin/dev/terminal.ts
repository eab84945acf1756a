// bp dev's terminal: its own lines (prefixed "bp dev:"), the app's output passed through, and the
// confirmation of a destructive schema change: a line "y" typed on standard input.

import * as readline from 'node:readline';
import type { Printer } from '../generate.ts';

export class Terminal {
  private lines: readline.Interface | undefined;

  constructor(readonly print: Printer) {}

  say(text: string): void {
    this.print.out(`bp dev: ${text}\n`);
  }

  warn(text: string): void {
    this.print.err(`bp dev: ${text}\n`);
  }

  /** Calls `onConfirm` for each line "y" (or "yes") typed on standard input. */
  listen(onConfirm: () => void): void {
    this.lines = readline.createInterface({ input: process.stdin, terminal: false });
    this.lines.on('line', (line) => {
      if (/^\s*y(es)?\s*$/i.test(line)) onConfirm();
    });
  }

  close(): void {
    this.lines?.close();
    // readline leaves stdin flowing: it would keep the process alive.
    process.stdin.pause();
  }
}
