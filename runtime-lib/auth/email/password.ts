// Password hashing with scrypt from node:crypto: a random salt per password, the parameters
// stored next to the hash so they can be raised later without breaking old hashes, and a
// constant-time comparison. Stored form: scrypt$N$r$p$<salt base64>$<hash base64>.

import { randomBytes, scrypt, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export const PASSWORD_MIN_LENGTH = 12;
/** Bounds the work (and memory) a single login or sign-up request can cause. */
export const PASSWORD_MAX_LENGTH = 1024;

const PARAMS = { N: 16384, r: 8, p: 1 } as const;
const KEY_LENGTH = 64;
const SALT_BYTES = 16;
// scrypt needs about 128 * N * r bytes. Stored hashes may use other (stronger) parameters, up to
// N * r = 2^18 (32 MiB): enough headroom, yet one verification cannot exhaust memory.
const MAX_N_TIMES_R = 2 ** 18;
const MAX_MEM = 64 * 1024 * 1024;

/** Why a new password is not acceptable, or undefined when it is. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `the password must be at least ${PASSWORD_MIN_LENGTH} characters long`;
  if (length > PASSWORD_MAX_LENGTH) return `the password must be at most ${PASSWORD_MAX_LENGTH} characters long`;
  return undefined;
}

/** Hashes off the event loop (libuv thread pool): a login must not stall other requests. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await scryptAsync(normalize(password), salt, KEY_LENGTH, { ...PARAMS, maxmem: MAX_MEM });
  return format(PARAMS.N, PARAMS.r, PARAMS.p, salt, key);
}

/** For the command line, where blocking is fine. */
export function hashPasswordSync(password: string): string {
  const salt = randomBytes(SALT_BYTES);
  const key = scryptSync(normalize(password), salt, KEY_LENGTH, { ...PARAMS, maxmem: MAX_MEM });
  return format(PARAMS.N, PARAMS.r, PARAMS.p, salt, key);
}

/** False for a wrong password and for a stored value that is not a hash this module made. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const key = await scryptAsync(normalize(password), parsed.salt, parsed.hash.length, {
    N: parsed.N,
    r: parsed.r,
    p: parsed.p,
    maxmem: MAX_MEM,
  });
  return timingSafeEqual(key, parsed.hash);
}

// The same characters typed on different systems can arrive composed or decomposed.
function normalize(password: string): string {
  return password.normalize('NFC');
}

function format(N: number, r: number, p: number, salt: Buffer, key: Buffer): string {
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

function parse(stored: string): { N: number; r: number; p: number; salt: Buffer; hash: Buffer } | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [N, r, p] = parts.slice(1, 4).map((v) => (/^\d{1,7}$/.test(v) ? Number(v) : NaN));
  // Reject parameters that would make verification absurdly slow or fail inside scrypt.
  if (!(N >= 2 && (N & (N - 1)) === 0) || !(r >= 1) || N * r > MAX_N_TIMES_R || !(p >= 1 && p <= 4)) return undefined;
  const salt = Buffer.from(parts[4], 'base64');
  const hash = Buffer.from(parts[5], 'base64');
  if (salt.length < 8 || hash.length < 16 || hash.length > 128) return undefined;
  return { N, r, p, salt, hash };
}

function scryptAsync(password: string, salt: Buffer, length: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, length, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}
