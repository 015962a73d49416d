import { trimOldest } from '../../util/trim-oldest.js';
import type { OtpCreateResult, OtpRecord, OtpResendResult, OtpStore, OtpVerifyResult } from '../types.js';
import type { RedisKeys } from './keys.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * OTPs on Redis. A record lives under its (account, phone) hash tag beside the phone's active
 * pointer and rate log, so each transition is one script on one Cluster slot; an id index (set once
 * at create, in the id's own slot) tells verify/resend/get where the record is, and a phone index
 * (account ids by latest expiry) finds a phone's OTPs when no account is known (USSD fallback).
 */
export class RedisOtpStore implements OtpStore {
  private readonly clock: () => number;
  /** Whether the scripts take the callers' `now` (tests only) instead of the server's TIME. */
  private readonly testTime: boolean;
  /**
   * id → [account, phone] as the id index holds it, for OTPs this instance created or looked up: the index is written
   * once (NX) and never changes, so a remembered answer is the index's own, and verify needs no read before its
   * script. Once the record is gone the script answers not found, as it would with the index gone.
   */
  private readonly located = new Map<string, [string, string]>();
  private readonly maxLocated: number;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    opts: { clock?: () => number; scriptClock?: () => number; maxLocated?: number } = {},
  ) {
    this.clock = opts.scriptClock ?? opts.clock ?? Date.now;
    this.testTime = opts.scriptClock !== undefined;
    this.maxLocated = opts.maxLocated ?? 50_000;
  }

  async create(rec: OtpRecord, opts: { rateLimit: number; rateWindowMs: number; retainMs: number; now: number }): Promise<OtpCreateResult> {
    const phone = this.keys.otpPhone(rec.accountId, rec.phone);
    const index = this.keys.otpIndex(rec.id);
    const record = this.keys.otpRecord(rec.accountId, rec.phone, rec.id);
    const retainUntil = rec.expiresAt + opts.retainMs;
    const keep = Math.max(1, retainUntil - opts.now);
    // The id index (NX also refuses a reused id) and the phone index live in other Cluster slots than the record, so
    // no script can write all three. They leave together, in one round trip: a request waits for one answer instead
    // of two in a row. When an index write fails or finds the id taken, a record the script made is withdrawn again,
    // so no record outlives the create without its index (its entry in the phone's hourly count stays, as for any
    // request that got that far); an index without a record reads as not found, and a phone index member left by a
    // refused create is only a wasted lookup.
    const [indexed, claimed, created] = await Promise.allSettled([
      this.redis.otpPhoneIndex(this.keys.otpPhoneIndex(rec.phone), rec.accountId, rec.expiresAt, this.at(opts.now)),
      this.redis.set(index, JSON.stringify([rec.accountId, rec.phone]), 'PX', keep, 'NX'),
      this.redis.otpCreate(
        phone.active,
        phone.rate,
        record,
        this.at(opts.now),
        opts.rateLimit,
        opts.rateWindowMs,
        retainUntil,
        ...recordFields(rec, retainUntil),
      ) as Promise<[string, ...(string | number)[]]>,
    ]);
    const claimedIndex = claimed.status === 'fulfilled' && claimed.value !== null;
    const indexFailure: unknown =
      claimed.status === 'rejected' ? claimed.reason : claimed.value === null ? new Error(`OTP id already exists: ${rec.id}`) : indexed.status === 'rejected' ? indexed.reason : null;
    if (indexFailure !== null) {
      if (created.status === 'fulfilled' && created.value[0] === 'OK') await this.withdraw(record, phone.active, rec, opts.now);
      if (claimedIndex) await this.redis.del(index).catch(() => {});
      throw indexFailure;
    }
    if (created.status === 'rejected') {
      await this.redis.del(index).catch(() => {});
      throw created.reason;
    }
    const r = created.value;
    if (r[0] === 'OK') {
      this.remember(rec.id, rec.accountId, rec.phone);
      return { ok: true };
    }
    await this.redis.del(index);
    switch (r[0]) {
      case 'ACTIVE':
        return { ok: false, reason: 'ACTIVE_OTP_EXISTS', retryAfterMs: Number(r[1]), activeId: String(r[2]) };
      case 'RATE':
        return { ok: false, reason: 'RATE_LIMIT_EXCEEDED', retryAfterMs: Number(r[1]) };
      default:
        throw new Error(`OTP id already exists: ${rec.id}`);
    }
  }

  /** Takes back a record made by a create that failed after all: the right hash deletes it and frees the phone. */
  private async withdraw(record: string, active: string, rec: OtpRecord, now: number): Promise<void> {
    await this.redis.otpVerify(record, active, rec.id, rec.codeHash, this.at(now), rec.accountId).catch(() => {});
  }

  /**
   * The scripts' `now`: the caller's under a test clock given to the store; else the server's TIME (instances whose
   * clocks differ agree on the rate window, expiry, attempts and cooldowns), shifted by how far the caller's `now` is
   * from this process's clock. That shift is 0 in production, where the caller's clock is this one read a moment
   * earlier (under a second); only a test moves the service's clock (an OTP past its expiry) without the store's.
   */
  private at(now: number): number | string {
    if (this.testTime) return now;
    const shift = Math.round(now - Date.now());
    return Math.abs(shift) < 1000 ? '' : `~${shift}`;
  }

  async get(id: string): Promise<OtpRecord | null> {
    const where = await this.locate(id);
    if (!where) return null;
    const flat = await this.redis.hgetall(where.record);
    return fromHash(flat, this.clock());
  }

  async active(accountId: string, phone: string, now: number): Promise<OtpRecord | null> {
    const pointer = await this.redis.get(this.keys.otpPhone(accountId, phone).active);
    if (!pointer) return null;
    const id = pointer.slice(0, pointer.lastIndexOf('|'));
    const rec = fromHash(await this.redis.hgetall(this.keys.otpRecord(accountId, phone, id)), now);
    return rec && now < rec.expiresAt && rec.attemptsLeft > 0 ? rec : null;
  }

  async activeForPhone(phone: string, now: number): Promise<OtpRecord[]> {
    const accounts = await this.redis.zrangebyscore(this.keys.otpPhoneIndex(phone), `(${now}`, '+inf');
    const found = await Promise.all(accounts.map((accountId) => this.active(accountId, phone, now)));
    return found.filter((r): r is OtpRecord => r !== null).sort((a, b) => b.createdAt - a.createdAt);
  }

  async verify(accountId: string, id: string, codeHash: string, now: number): Promise<OtpVerifyResult> {
    const where = await this.locate(id);
    if (!where) return { status: 'not_found' };
    const r = (await this.redis.otpVerify(where.record, where.active, id, codeHash, this.at(now), accountId)) as unknown[];
    // The record is gone: drop its index too. Not awaited: an index without its record reads as not found,
    // and it expires with the retention anyway.
    if (r[0] === 'verified' || r[0] === 'not_found') {
      this.located.delete(id);
      this.redis.del(where.index).catch(() => {});
    }
    switch (r[0]) {
      case 'verified':
        return { status: 'verified', record: parseRecord(r[1] as string[]) };
      case 'invalid':
        return { status: 'invalid', attemptsRemaining: Number(r[1]), record: parseRecord(r[2] as string[]) };
      case 'locked':
        return { status: 'locked', record: parseRecord(r[1] as string[]) };
      case 'foreign':
        return { status: 'not_found' };
      default:
        return { status: r[0] as 'expired' | 'not_found' };
    }
  }

  async resend(accountId: string, id: string, cooldownMs: number, now: number): Promise<OtpResendResult> {
    const where = await this.locate(id);
    if (!where) return { status: 'not_found' };
    const r = (await this.redis.otpResend(where.record, this.at(now), cooldownMs, accountId)) as unknown[];
    if (r[0] === 'not_found') {
      this.located.delete(id);
      this.redis.del(where.index).catch(() => {});
    }
    switch (r[0]) {
      case 'ok':
        return { status: 'ok', record: parseRecord(r[1] as string[]) };
      case 'cooldown':
        return { status: 'cooldown', retryAfterMs: Number(r[1]) };
      case 'foreign':
        return { status: 'not_found' };
      default:
        return { status: r[0] as 'locked' | 'expired' | 'not_found' };
    }
  }

  private async locate(id: string): Promise<{ record: string; active: string; index: string } | null> {
    const index = this.keys.otpIndex(id);
    let where = this.located.get(id);
    if (!where) {
      const v = await this.redis.get(index);
      if (!v) return null;
      where = JSON.parse(v) as [string, string];
      this.remember(id, where[0], where[1]);
    }
    const [accountId, phone] = where;
    return { record: this.keys.otpRecord(accountId, phone, id), active: this.keys.otpPhone(accountId, phone).active, index };
  }

  private remember(id: string, accountId: string, phone: string): void {
    this.located.set(id, [accountId, phone]);
    trimOldest(this.located, this.maxLocated);
  }
}

function recordFields(rec: OtpRecord, retainUntil: number): (string | number)[] {
  return [
    'id', rec.id,
    'accountId', rec.accountId,
    'phone', rec.phone,
    'codeCipher', rec.codeCipher,
    'codeHash', rec.codeHash,
    'createdAt', rec.createdAt,
    'expiresAt', rec.expiresAt,
    'lastSentAt', rec.lastSentAt,
    'maxAttempts', rec.maxAttempts,
    'attemptsLeft', rec.attemptsLeft,
    'meta', JSON.stringify(rec.meta ?? {}),
    'retainUntil', retainUntil,
  ];
}

/** A record from HGETALL (object form from the client, flat array from a script), or null once past retention. */
function fromHash(h: Record<string, string>, now: number): OtpRecord | null {
  if (!h.id) return null;
  if (now >= Number(h.retainUntil)) return null;
  return toRecord(h);
}

function parseRecord(flat: string[]): OtpRecord {
  const h: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) h[flat[i]] = flat[i + 1];
  return toRecord(h);
}

function toRecord(h: Record<string, string>): OtpRecord {
  return {
    id: h.id,
    accountId: h.accountId,
    phone: h.phone,
    codeCipher: h.codeCipher,
    codeHash: h.codeHash,
    createdAt: Number(h.createdAt),
    expiresAt: Number(h.expiresAt),
    lastSentAt: Number(h.lastSentAt),
    maxAttempts: Number(h.maxAttempts),
    attemptsLeft: Number(h.attemptsLeft),
    meta: JSON.parse(h.meta) as Record<string, unknown>,
  };
}
