import { createHmac, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number, opts: { N: number; r: number; p: number; maxmem: number }) => Promise<Buffer>;

/** Reads a file from the data folder, or creates it (mode 0600) with a fresh value. */
function readOrCreate(dataDir: string, name: string, make: () => string): string {
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const value = make();
  writeFileSync(file, value + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return value;
}

export function adminTokenPath(dataDir: string): string {
  return join(dataDir, 'admin.token');
}

/** The admin bearer token: from config, else dataDir/admin.token (generated on first start). */
export function loadAdminToken(dataDir: string, configured: string | null): string {
  return configured ?? readOrCreate(dataDir, 'admin.token', () => 'fat_' + randomBytes(24).toString('base64url'));
}

/** The 32-byte master key: from config (base64 or hex), else dataDir/secret.key (generated on first start). */
export function loadSecretKey(dataDir: string, configured: string | null): Buffer {
  const text = configured ?? readOrCreate(dataDir, 'secret.key', () => randomBytes(32).toString('base64'));
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new Error('security.secretKey must be 32 bytes, base64 or hex encoded');
  return key;
}

/** A purpose-bound subkey, so the API-secret hash and OTP encryption never share key material. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return createHmac('sha256', master).update('ferry:' + purpose).digest();
}

/**
 * Keyed SHA-256 of a high-entropy API secret. A slow KDF buys nothing against 256-bit secrets and
 * would cap the request rate; the key keeps a stolen table useless without the server's key.
 */
export function hashApiSecret(hashKey: Buffer, secret: string): string {
  return createHmac('sha256', hashKey).update(secret).digest('hex');
}

/** Constant-time equality of two hex digests (different lengths are simply unequal). */
export function safeEqualHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

// scrypt cost for short SMPP passwords, checked once per bind: ~50 ms on this class of machine.
const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltB64, hashB64] = parts;
  const expected = Buffer.from(hashB64, 'base64');
  const actual = await scrypt(password, Buffer.from(saltB64, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: 64 * 1024 * 1024,
  });
  return timingSafeEqual(expected, actual);
}
