// How the users command gets a new password: typed at a terminal (not echoed, asked twice) or
// piped on stdin (one line). Never from an argument: arguments are visible to every user of the
// machine (ps, /proc) and stay in the shell's history.

import type { Readable, Writable } from 'node:stream';

/** A terminal's stdin, or any other readable (a pipe, a file). */
type Input = Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };

/** The most stdin may hold: a password is at most 1024 characters, 4 bytes each in UTF-8. */
const MAX_PIPED_BYTES = 8 * 1024;

export async function readNewPassword(input: Input, prompts: Writable): Promise<string> {
  if (input.isTTY && input.setRawMode) {
    const [first, second] = await readHiddenLines(input, prompts, ['Password: ', 'Repeat the password: ']);
    if (first !== second) throw new Error('the two passwords differ; nothing was changed');
    return first;
  }
  return readPipedLine(input);
}

async function readPipedLine(input: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > MAX_PIPED_BYTES) throw new Error('stdin holds more than a password: pipe one line');
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (/[\r\n]/.test(text)) throw new Error('stdin holds several lines: pipe the password alone, on one line');
  if (text === '') {
    throw new Error(
      `no password on stdin: run the command in a terminal to be asked for it, or pipe it, ` +
        `e.g. printf '%s\\n' "$PASSWORD" | npm run users -- add --email E`,
    );
  }
  return text;
}

/** Reads one line per prompt with the terminal in raw mode, so nothing typed is echoed. */
function readHiddenLines(input: Input, prompts: Writable, questions: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    let current = '';
    let afterReturn = false;
    const finish = (err?: Error): void => {
      input.off('data', onData);
      input.off('end', onEnd);
      input.setRawMode?.(false);
      input.pause();
      if (err) {
        prompts.write('\n');
        reject(err);
      } else resolve(lines);
    };
    const onData = (chunk: Buffer | string): void => {
      // Escape sequences (arrow keys and the like) are not part of a password.
      // eslint-disable-next-line no-control-regex -- ESC starts the sequences removed here
      const text = String(chunk).replace(/\x1b\[[0-9;]*[A-Za-z~]|\x1b./g, '');
      for (const ch of text) {
        // A pasted "\r\n" ends one line, not two.
        const crlf = afterReturn && ch === '\n';
        afterReturn = ch === '\r';
        if (crlf) continue;
        // Ctrl-C, or Ctrl-D on an empty line.
        if (ch === '\x03' || (ch === '\x04' && current === '')) {
          return finish(new Error('cancelled; nothing was changed'));
        }
        if (ch === '\r' || ch === '\n') {
          prompts.write('\n');
          lines.push(current);
          current = '';
          if (lines.length === questions.length) return finish();
          prompts.write(questions[lines.length]);
        } else if (ch === '\x7f' || ch === '\b') {
          current = [...current].slice(0, -1).join('');
        } else if (ch >= ' ') {
          current += ch;
        }
      }
    };
    const onEnd = (): void => finish(new Error('the terminal closed before the password was typed'));
    input.setRawMode?.(true);
    input.setEncoding('utf8');
    input.on('data', onData);
    input.once('end', onEnd);
    input.resume();
    prompts.write(questions[0]);
  });
}
