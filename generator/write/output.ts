// Write stage, the only code that changes the disk. It writes into a folder only files bp
// owns: new files, or files bp wrote before and nobody edited since (per the manifest's
// hashes). Hand-edited or foreign files stop the write before anything changes.
//
// Scaffolded files (src/extend.ts) are the team's: written where missing, otherwise left as they
// are, whatever they hold. They are never a conflict, never stale and never removed.

import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { GENERATED_HEADER } from '../header.ts';
import { MAX_WIDTH } from '../emit/ts-literal.ts';
import type { PreviousMigrations, PreviousOutput } from '../emit/migrations.ts';
import { PRISMA_DIR, type PrismaProvider } from '../emit/prisma-providers.ts';

export const MANIFEST = '.bp-manifest.json';

interface Manifest {
  '//': string;
  generatedBy: string;
  /** Files bp owns, with the SHA-256 of what it wrote. */
  files: Record<string, string>;
  /** Files bp scaffolded once and does not own: a record for the reader, never compared. */
  userOwned?: string[];
}

const sha256 = (content: string | Buffer): string => createHash('sha256').update(content).digest('hex');

function readManifest(outDir: string): Manifest | undefined {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(outDir, MANIFEST), 'utf8')) as Manifest;
    return typeof m.files === 'object' && m.files !== null ? m : undefined;
  } catch {
    return undefined;
  }
}

function readIfFile(p: string): Buffer | undefined {
  try {
    return fs.statSync(p).isFile() ? fs.readFileSync(p) : undefined;
  } catch {
    return undefined;
  }
}

/** What the emit stage needs from the previous generation: each provider's schema and migrations bp wrote. */
export function readPreviousOutput(outDir: string): PreviousOutput {
  const owned = Object.keys(readManifest(outDir)?.files ?? {});
  const read = (file: string) => readIfFile(path.join(outDir, file))?.toString('utf8');
  const previous = (provider: PrismaProvider): PreviousMigrations => {
    const dir = `${PRISMA_DIR[provider]}/`;
    const migrations = new Map<string, string>();
    for (const file of owned) {
      const m = file.startsWith(dir) ? /^migrations\/([^/]+)\/migration\.sql$/.exec(file.slice(dir.length)) : null;
      const content = m ? read(file) : undefined;
      if (m && content !== undefined) migrations.set(m[1], content);
    }
    const schemaFile = `${dir}schema.prisma`;
    return { schema: owned.includes(schemaFile) ? read(schemaFile) : undefined, migrations };
  };
  return { sqlite: previous('sqlite'), postgresql: previous('postgresql') };
}

export interface WritePlan {
  write: string[];
  unchanged: string[];
  remove: string[];
  /** Scaffolded files that are missing: written once, then the team's. */
  scaffold: string[];
  /** Scaffolded files that exist: left alone, whatever they hold. */
  userOwned: string[];
  /** Files bp would have to overwrite but does not own, or that were edited by hand. */
  conflicts: Array<{ file: string; reason: string }>;
}

export function planWrite(outDir: string, files: Map<string, string>, scaffold: Map<string, string>): WritePlan {
  const manifest = readManifest(outDir);
  const plan: WritePlan = { write: [], unchanged: [], remove: [], scaffold: [], userOwned: [], conflicts: [] };
  for (const file of scaffold.keys()) {
    if (files.has(file)) throw new Error(`${file} cannot be both generated and scaffolded`);
    // Any entry counts as present (a symlink, even a broken one): only a missing path is scaffolded.
    if (exists(path.join(outDir, file))) plan.userOwned.push(file);
    else plan.scaffold.push(file);
  }
  for (const [file, content] of files) {
    const existing = readIfFile(path.join(outDir, file));
    if (existing === undefined) plan.write.push(file);
    else if (existing.equals(Buffer.from(content))) plan.unchanged.push(file);
    else if (!manifest?.files[file]) plan.conflicts.push({ file, reason: 'exists and was not written by bp' });
    else if (manifest.files[file] !== sha256(existing))
      plan.conflicts.push({ file, reason: 'was edited after bp wrote it' });
    else plan.write.push(file);
  }
  for (const [file, hash] of Object.entries(manifest?.files ?? {})) {
    if (files.has(file) || scaffold.has(file)) continue;
    const existing = readIfFile(path.join(outDir, file));
    if (existing === undefined) continue;
    // A stale file that was edited by hand is left alone: it is the user's now.
    if (sha256(existing) === hash) plan.remove.push(file);
  }
  return plan;
}

/** Applies a plan without conflicts. Each file is written to a temporary name, then renamed. */
export function applyWrite(
  outDir: string,
  files: Map<string, string>,
  scaffold: Map<string, string>,
  plan: WritePlan,
  version: string,
): void {
  if (plan.conflicts.length) throw new Error('refusing to write over files bp does not own');
  for (const file of plan.write) writeFile(path.join(outDir, file), files.get(file) as string);
  for (const file of plan.scaffold) {
    const target = path.join(outDir, file);
    // A file that appeared since the plan was made is the team's: 'wx' never replaces it.
    fs.mkdirSync(path.dirname(target), { recursive: true });
    try {
      fs.writeFileSync(target, scaffold.get(file) as string, { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  for (const file of plan.remove) {
    fs.rmSync(path.join(outDir, file), { force: true });
    removeEmptyParents(outDir, path.dirname(path.join(outDir, file)));
  }
  const manifest: Manifest = {
    '//': GENERATED_HEADER,
    generatedBy: `bp ${version}`,
    files: Object.fromEntries([...files].map(([file, content]) => [file, sha256(content)])),
    userOwned: [...scaffold.keys()].sort(),
  };
  fs.writeFileSync(path.join(outDir, MANIFEST), manifestText(manifest));
}

/**
 * The manifest as indented JSON, within the width of every generated file: an entry whose path and hash
 * do not fit on one line (a migration of prisma/postgres/, say) has its hash on the next line.
 */
function manifestText(manifest: Manifest): string {
  const lines = JSON.stringify(manifest, null, 2).split('\n');
  return `${lines.flatMap((line) => (line.length <= MAX_WIDTH ? [line] : splitEntry(line))).join('\n')}\n`;
}

function splitEntry(line: string): string[] {
  const entry = /^( *)("(?:[^"\\]|\\.)*"): (.*)$/.exec(line);
  return entry ? [`${entry[1]}${entry[2]}:`, `${entry[1]}  ${entry[3]}`] : [line];
}

function writeFile(target: string, content: string): void {
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmp = `${target}.bp-tmp`;
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, target);
}

function exists(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function removeEmptyParents(root: string, dir: string): void {
  const top = path.resolve(root);
  for (let d = path.resolve(dir); d.startsWith(top + path.sep); d = path.dirname(d)) {
    if (fs.readdirSync(d).length > 0) return;
    fs.rmdirSync(d);
  }
}
