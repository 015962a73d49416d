import { createCipheriv, createDecipheriv, createHash } from 'node:crypto';
import { randomBytesPooled } from '../util/ids.js';

export interface CipherKey {
  id: string;
  key: Buffer;
}

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * AES-256-GCM for small secrets kept in the database (e.g. upstream passwords). Every ciphertext names the key
 * that made it, "<keyId>:<iv b64>:<tag b64>:<ct b64>", so the key can rotate: new values use the current key while
 * values written under older keys still decrypt as long as those keys are passed in. The key id is bound as
 * additional authenticated data, so a ciphertext cannot be relabelled to another key.
 */
export class SecretCipher {
  private readonly keys = new Map<string, Buffer>();
  private readonly currentId: string;

  /** A Map's first entry is the current key; the others only decrypt. */
  constructor(keys: Map<string, Buffer> | { current: CipherKey; others?: readonly CipherKey[] }) {
    const list: CipherKey[] = keys instanceof Map ? [...keys].map(([id, key]) => ({ id, key })) : [keys.current, ...(keys.others ?? [])];
    if (!list.length) throw new Error('SecretCipher needs at least one key');
    for (const { id, key } of list) {
      if (!KEY_ID.test(id)) throw new Error(`cipher key id ${JSON.stringify(id)} must be 1-64 characters of A-Z a-z 0-9 _ . -`);
      if (key.length !== 32) throw new Error(`cipher key ${id} must be 32 bytes`);
      if (this.keys.has(id)) throw new Error(`cipher key id ${id} is given twice`);
      this.keys.set(id, Buffer.from(key));
    }
    this.currentId = list[0].id;
  }

  /** A short, stable id for a key (a fingerprint that reveals nothing usable), for callers with unnamed keys. */
  static keyIdOf(key: Buffer): string {
    return createHash('sha256').update('ferry:key-id:').update(key).digest('hex').slice(0, 12);
  }

  get currentKeyId(): string {
    return this.currentId;
  }

  encrypt(plain: string): string {
    // A random 96-bit IV per value (GCM must never repeat one under a key); pooled, as the generator's per-call cost
    // was most of an encryption.
    const iv = randomBytesPooled(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.keys.get(this.currentId)!, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(this.currentId));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [this.currentId, iv.toString('base64'), cipher.getAuthTag().toString('base64'), ct.toString('base64')].join(':');
  }

  /** Throws when the value is malformed, its key is unknown, or it was altered (never says more than that). */
  decrypt(value: string): string {
    const parts = value.split(':');
    if (parts.length !== 4) throw new Error('not a ciphertext of SecretCipher');
    const [keyId, ivB64, tagB64, ctB64] = parts;
    const key = this.keys.get(keyId);
    if (!key) throw new Error(`ciphertext was made with key ${keyId}, which is not configured`);
    const iv = Buffer.from(ivB64, 'base64');
    const tag = Buffer.from(tagB64, 'base64');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('not a ciphertext of SecretCipher');
    const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(keyId));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(Buffer.from(ctB64, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error(`ciphertext under key ${keyId} failed authentication (altered, or the key changed)`);
    }
  }

  /** True when the value was made with another key than the current one (re-encrypt it to finish a rotation). */
  isStale(value: string): boolean {
    return value.split(':', 1)[0] !== this.currentId;
  }
}
