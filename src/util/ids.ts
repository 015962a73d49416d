import { randomBytes, randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

// One pooled random buffer refilled in bulk keeps id generation off the per-call syscall path.
const pool = Buffer.allocUnsafe(4096);
let poolPos = pool.length;
function randomByte(): number {
  if (poolPos >= pool.length) {
    randomFillSync(pool);
    poolPos = 0;
  }
  return pool[poolPos++];
}

/**
 * `n` bytes (n ≤ 256) from the CSPRNG through the same pool: for small per-call values such as cipher IVs, where
 * asking the generator each time costs more than the work around it. Each byte is handed out once.
 */
export function randomBytesPooled(n: number): Buffer {
  if (n > 256) throw new RangeError('randomBytesPooled is for at most 256 bytes');
  if (poolPos + n > pool.length) {
    randomFillSync(pool);
    poolPos = 0;
  }
  const out = Buffer.allocUnsafe(n);
  pool.copy(out, 0, poolPos, poolPos + n);
  poolPos += n;
  return out;
}

/**
 * Time-sortable id: 10 chars of millisecond time + 16 random chars (80 bits), lower-case Crockford base32,
 * behind a prefix such as `msg_`. Sortable ids keep ledger inserts append-mostly.
 */
export function newId(prefix: string, now = Date.now()): string {
  let out = '';
  let t = now;
  for (let i = 9; i >= 0; i--) {
    out = CROCKFORD[t % 32] + out;
    t = Math.floor(t / 32);
  }
  for (let i = 0; i < 16; i++) out += CROCKFORD[randomByte() & 31];
  return prefix + out;
}

/**
 * The smallest id `newId(prefix, ms)` can make: every id made before `ms` sorts below it. Lets a query on a table keyed
 * by such ids bound a time range by its primary key.
 */
export function idFloor(prefix: string, ms: number): string {
  let out = '';
  let t = Math.max(0, Math.floor(ms));
  for (let i = 9; i >= 0; i--) {
    out = CROCKFORD[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return prefix + out + '0'.repeat(16);
}

const ID_BODY = /^([0-9a-hjkmnp-tv-z]{10})[0-9a-hjkmnp-tv-z]{16}$/;

/**
 * The time (epoch ms) an id made by newId(prefix) carries in its first ten characters, or null for any other id: a
 * lookup by id bounds its rows' time with it, so a table partitioned by time is read in the partitions near it.
 */
export function idTime(prefix: string, id: string): number | null {
  if (!id.startsWith(prefix)) return null;
  const m = ID_BODY.exec(id.slice(prefix.length));
  if (!m) return null;
  let ms = 0;
  for (const c of m[1]) ms = ms * 32 + CROCKFORD.indexOf(c);
  return ms;
}

/** High-entropy secret (url-safe base64, 32 bytes = 256 bits by default). */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Random string over an alphabet, unbiased (rejection sampling). */
export function randomFrom(alphabet: string, length: number): string {
  const n = alphabet.length;
  const limit = 256 - (256 % n);
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < limit) out += alphabet[b % n];
  }
  return out;
}
