import { createHmac, randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { SecretCipher } from '../../security/cipher.js';
import type { OtpRecord, OtpStore } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import type { SmsApi } from '../../messaging/types.js';
import type { OtpMetrics } from './otp-metrics.js';
import type { UssdOtpFallback } from './ussd-otp-fallback.js';

export type OtpPinType = 'NUMERIC' | 'ALPHANUMERIC' | 'ALPHABETIC';
export type OtpDuration = 'minutes' | 'hours';

/**
 * Code length and alphabet per type (spec §2.4). ALPHANUMERIC leaves out 0/O and 1/I, which people misread when
 * typing a code from an SMS; ALPHABETIC has no digits to confuse letters with, so it keeps all 26.
 */
export const PIN_TYPES: Readonly<Record<OtpPinType, { min: number; max: number; alphabet: string }>> = {
  NUMERIC: { min: 4, max: 8, alphabet: '0123456789' },
  ALPHANUMERIC: { min: 6, max: 12, alphabet: 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789' },
  ALPHABETIC: { min: 5, max: 10, alphabet: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' },
};

/** Spec §8. */
export const OTP_LIMITS = {
  defaultPinLength: 6,
  minExpiryMinutes: 1,
  maxExpiryMinutes: 1440,
  defaultExpiryMinutes: 5,
  defaultRetries: 3,
  maxRetries: 10,
} as const;

export type OtpEventType = 'otp.requested' | 'otp.verified' | 'otp.failed' | 'otp.expired';

/** What a webhook may carry: never the code. */
export interface OtpEventData {
  id: string;
  accountId: string;
  phone: string;
  at: string;
  expiresAt?: string;
  messageId?: string;
  metadata?: Record<string, unknown>;
  /** otp.failed: INVALID_PIN (a wrong pin, attemptsRemaining 0 for the one that used the last attempt) or OTP_LOCKED (a verify after that). */
  reason?: 'INVALID_PIN' | 'OTP_LOCKED';
  attemptsRemaining?: number;
}

export interface OtpServiceOptions {
  store: OtpStore;
  sms: Pick<SmsApi, 'submit'>;
  /** Keys derived for OTP (ctx.deriveKey('otp-code'), ctx.deriveKey('otp-hash')): code encryption and phone hashing. */
  keys: { code: Buffer; hash: Buffer };
  metrics?: OtpMetrics;
  log?: Logger;
  resendCooldownMs: number;
  requestsPerHour: number;
  /** How long after expiry verify says OTP_EXPIRED (then OTP_NOT_FOUND). */
  retainMs: number;
  /** Webhook events; a throwing or rejecting hook is logged and never fails the request. */
  onEvent?: (type: OtpEventType, data: OtpEventData) => void | Promise<void>;
  clock?: () => number;
}

export interface OtpRequestInput {
  accountId: string;
  /** International digits (already normalised: the phone keys the single-active rule and the rate limit). */
  phone: string;
  from: string;
  /** Template with {code}, optionally {amount} and {duration}. */
  message: string;
  pinType: OtpPinType;
  pinLength: number;
  expiry: { amount: number; duration: OtpDuration };
  maxAttempts: number;
  metadata: Record<string, unknown>;
  allowedRecipients?: readonly string[] | null;
}

export type OtpRequestResult =
  | { ok: true; id: string; expiresAt: number; messageId: string }
  | { ok: false; reason: 'ACTIVE_OTP_EXISTS' | 'RATE_LIMIT_EXCEEDED'; retryAfterMs: number };

export type OtpVerifyOutcome =
  | { status: 'verified'; id: string }
  | { status: 'invalid'; attemptsRemaining: number }
  | { status: 'locked' }
  | { status: 'expired' }
  | { status: 'not_found' };

export type OtpResendOutcome =
  | { status: 'ok'; id: string; expiresAt: number; messageId: string }
  | { status: 'cooldown'; retryAfterMs: number }
  | { status: 'locked' }
  | { status: 'expired' }
  | { status: 'not_found' };

/** A pending code as the USSD fallback reads it out. */
export interface PendingOtp {
  id: string;
  accountId: string;
  code: string;
  sender: string;
  expiresAt: number;
}

/** What an OTP record's meta holds: enough to send the same text again. */
interface OtpMeta {
  from: string;
  template: string;
  pinType: OtpPinType;
  expiry: { amount: number; duration: OtpDuration };
  metadata: Record<string, unknown>;
}

const HOUR_MS = 3_600_000;

export function expiryMinutes(e: { amount: number; duration: OtpDuration }): number {
  return e.duration === 'hours' ? e.amount * 60 : e.amount;
}

/** The text sent: {code}, {amount} and {duration} replaced in one pass (a code never holds braces). */
export function renderOtpMessage(template: string, code: string, expiry: { amount: number; duration: OtpDuration }): string {
  return template.replace(/\{(code|amount|duration)\}/g, (_, k: string) => (k === 'code' ? code : k === 'amount' ? String(expiry.amount) : expiry.duration));
}

/** A code from the CSPRNG, each character uniform over the type's alphabet. */
export function generateCode(pinType: OtpPinType, length: number): string {
  const { alphabet } = PIN_TYPES[pinType];
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/**
 * The OTP product (spec §3.1, §7.1): one active code per (account, phone), at most `requestsPerHour` new ones per
 * phone, sent as an SMS on the priority lane; verify with limited attempts; resend after a cooldown; read-out for
 * the USSD fallback. Codes are stored encrypted (AES-256-GCM, for resend and USSD) and as a keyed HMAC bound to
 * the OTP id (what verify compares, atomically, in the store); they never reach logs, metrics or errors.
 */
export class OtpService {
  /** Epoch-ms clock for every OTP decision; tests move it to reach expiry without waiting. */
  clock: () => number;
  /** Webhook events (from the options; may also be set once the webhook service exists). */
  onEvent: OtpServiceOptions['onEvent'];
  /** The USSD fallback, set by the OTP module: the USSD module (which reaches OTP only through this service) serves it as a reserved code. */
  ussdFallback: UssdOtpFallback | null = null;
  private readonly cipher: SecretCipher;
  private readonly hashKey: Buffer;
  /** OTPs this instance sent, until they are verified, locked or found expired (for otp.expired). */
  private readonly watched = new Map<string, OtpRecord>();

  constructor(private readonly o: OtpServiceOptions) {
    this.clock = o.clock ?? Date.now;
    this.onEvent = o.onEvent;
    const key = o.keys.code;
    // The key id travels in each ciphertext, so a future key change can keep reading codes made before it.
    this.cipher = new SecretCipher({ current: { id: SecretCipher.keyIdOf(key), key } });
    this.hashKey = o.keys.hash;
  }

  now(): number {
    return this.clock();
  }

  /**
   * Creates the OTP (atomically refused while one is active or past the hourly limit), then sends it. When the SMS
   * is refused (SmsError: credit, route, suspended...) the OTP is withdrawn so the phone is not left blocked by a
   * code nobody received, and the error is rethrown; the attempt still counts toward the hourly limit.
   */
  async request(input: OtpRequestInput): Promise<OtpRequestResult> {
    const now = Math.floor(this.clock());
    const code = generateCode(input.pinType, input.pinLength);
    const id = newId('otp_', now);
    const expiresAt = now + expiryMinutes(input.expiry) * 60_000;
    const meta: OtpMeta = { from: input.from, template: input.message, pinType: input.pinType, expiry: input.expiry, metadata: input.metadata };
    const rec: OtpRecord = {
      id,
      accountId: input.accountId,
      phone: input.phone,
      codeCipher: this.cipher.encrypt(code),
      codeHash: this.hash(id, code),
      createdAt: now,
      expiresAt,
      lastSentAt: now,
      maxAttempts: input.maxAttempts,
      attemptsLeft: input.maxAttempts,
      meta: meta as unknown as Record<string, unknown>,
    };
    const created = await this.o.store.create(rec, { rateLimit: this.o.requestsPerHour, rateWindowMs: HOUR_MS, retainMs: this.o.retainMs, now });
    if (!created.ok) {
      this.o.metrics?.request(created.reason === 'ACTIVE_OTP_EXISTS' ? 'active_exists' : 'rate_limited');
      return { ok: false, reason: created.reason, retryAfterMs: created.retryAfterMs };
    }
    let messageId: string;
    try {
      messageId = await this.send(rec, meta, code, input.allowedRecipients);
    } catch (err) {
      this.o.metrics?.request('send_failed');
      // The right hash "verifies" it: the store's atomic delete, which also frees the phone.
      await this.o.store.verify(rec.accountId, id, rec.codeHash, now).catch((e: unknown) => this.o.log?.warn({ otpId: id, err: (e as Error).message }, 'could not withdraw an unsent OTP'));
      throw err;
    }
    this.o.metrics?.request('sent');
    this.emit('otp.requested', rec, { expiresAt: new Date(expiresAt).toISOString(), messageId, metadata: input.metadata });
    this.watchExpiry(rec);
    return { ok: true, id, expiresAt, messageId };
  }

  /**
   * Another account's id is not found (and uses none of its attempts). One atomic store step: the owner check,
   * the comparison and the attempt count happen together, so verify costs no read before it.
   */
  async verify(accountId: string, id: string, pin: string): Promise<OtpVerifyOutcome> {
    const now = Math.floor(this.clock());
    const res = await this.o.store.verify(accountId, id, this.hash(id, normalizePin(pin)), now);
    switch (res.status) {
      case 'verified':
        this.o.metrics?.verify('verified');
        this.unwatch(id);
        this.emit('otp.verified', res.record, { metadata: metaOf(res.record).metadata });
        return { status: 'verified', id };
      case 'invalid':
        this.o.metrics?.verify('invalid_pin');
        // The last attempt is used: the OTP is locked, so it cannot expire unverified in the sense of otp.expired.
        if (res.attemptsRemaining === 0) this.unwatch(id);
        this.emit('otp.failed', res.record, { reason: 'INVALID_PIN', attemptsRemaining: res.attemptsRemaining, metadata: metaOf(res.record).metadata });
        return { status: 'invalid', attemptsRemaining: res.attemptsRemaining };
      case 'locked':
        this.o.metrics?.verify('locked');
        this.unwatch(id);
        this.emit('otp.failed', res.record, { reason: 'OTP_LOCKED', attemptsRemaining: 0, metadata: metaOf(res.record).metadata });
        return { status: 'locked' };
      default:
        this.o.metrics?.verify(res.status);
        return { status: res.status };
    }
  }

  /** The same code, id and expiry, sent again once the cooldown since the last send has passed. */
  async resend(accountId: string, id: string, allowedRecipients?: readonly string[] | null): Promise<OtpResendOutcome> {
    const now = Math.floor(this.clock());
    const res = await this.o.store.resend(accountId, id, this.o.resendCooldownMs, now);
    if (res.status !== 'ok') {
      this.o.metrics?.resend(res.status);
      return res;
    }
    const rec = res.record;
    let messageId: string;
    try {
      messageId = await this.send(rec, metaOf(rec), this.cipher.decrypt(rec.codeCipher), allowedRecipients);
    } catch (err) {
      this.o.metrics?.resend('send_failed');
      throw err;
    }
    this.o.metrics?.resend('sent');
    return { status: 'ok', id, expiresAt: rec.expiresAt, messageId };
  }

  /** The phone's pending codes under every account, newest first (USSD fallback). Unreadable ones are skipped. */
  async pendingForPhone(phone: string): Promise<PendingOtp[]> {
    const recs = await this.o.store.activeForPhone(phone, Math.floor(this.clock()));
    const out: PendingOtp[] = [];
    for (const r of recs) {
      try {
        out.push({ id: r.id, accountId: r.accountId, code: this.cipher.decrypt(r.codeCipher), sender: metaOf(r).from, expiresAt: r.expiresAt });
      } catch (err) {
        this.o.log?.warn({ otpId: r.id, err: (err as Error).message }, 'pending OTP could not be decrypted (secret key changed?)');
      }
    }
    return out;
  }

  /** Stops the expiry watch (otp.expired is then not emitted for OTPs this instance sent). */
  close(): void {
    this.watched.clear();
  }

  private async send(rec: OtpRecord, meta: OtpMeta, code: string, allowedRecipients?: readonly string[] | null): Promise<string> {
    const accepted = await this.o.sms.submit({
      accountId: rec.accountId,
      ingress: 'rest',
      source: meta.from,
      destination: rec.phone,
      destTon: 1,
      text: renderOtpMessage(meta.template, code, meta.expiry),
      // The ledger keeps the text encrypted; what it shows has the code masked.
      seal: true,
      displayText: renderOtpMessage(meta.template, '*'.repeat(code.length), meta.expiry),
      lane: 'priority',
      priority: 1,
      registeredDelivery: 1,
      // Not worth delivering after the code is dead.
      expiresAt: rec.expiresAt,
      reference: rec.id,
      allowedRecipients: allowedRecipients ?? null,
    });
    return accepted.messageId;
  }

  private hash(id: string, code: string): string {
    // Bound to the id, so two OTPs with the same code do not share a hash.
    return createHmac('sha256', this.hashKey).update(id).update('\0').update(code).digest('hex');
  }

  private emit(type: OtpEventType, rec: OtpRecord, extra: Partial<OtpEventData>): void {
    const hook = this.onEvent;
    if (!hook) return;
    const data: OtpEventData = { id: rec.id, accountId: rec.accountId, phone: rec.phone, at: new Date(this.clock()).toISOString(), ...extra };
    const failed = (err: unknown) => this.o.log?.warn({ event: type, otpId: rec.id, err: (err as Error).message }, 'OTP event hook failed');
    try {
      void Promise.resolve(hook(type, data)).catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  /**
   * otp.expired comes from a once-a-second sweep of the OTPs this instance sent (`sweepExpired`, the OTP module's
   * instance job `otp.expiry-sweep`; it follows `clock`): an OTP past its expiry that the store still holds unlocked
   * was never verified. A restart forgets the watch list.
   */
  private watchExpiry(rec: OtpRecord): void {
    if (!this.onEvent) return;
    this.watched.set(rec.id, rec);
  }

  /** Emits otp.expired for the watched OTPs past their expiry that were never verified or locked; errors are logged per OTP. */
  async sweepExpired(): Promise<void> {
    const now = this.clock();
    for (const [id, rec] of this.watched) {
      if (now < rec.expiresAt) continue;
      this.watched.delete(id);
      try {
        const cur = await this.o.store.get(id);
        if (cur && cur.attemptsLeft > 0) this.emit('otp.expired', cur, { expiresAt: new Date(cur.expiresAt).toISOString(), metadata: metaOf(cur).metadata });
      } catch (err) {
        this.o.log?.warn({ otpId: id, err: (err as Error).message }, 'OTP expiry check failed');
      }
    }
  }

  private unwatch(id: string): void {
    this.watched.delete(id);
  }

  /** The limits its endpoints enforce, for the rate rules shown with the key statistics (logs module). */
  get limits(): { requestsPerHour: number; resendCooldownSeconds: number } {
    return { requestsPerHour: this.o.requestsPerHour, resendCooldownSeconds: this.o.resendCooldownMs / 1000 };
  }
}

function metaOf(rec: OtpRecord): OtpMeta {
  return rec.meta as unknown as OtpMeta;
}

/**
 * What the user typed, as the code was generated: spaces and dashes dropped, letters upper-cased, whatever the pin
 * type. NUMERIC codes hold only digits, which upper-casing leaves alone, and a pin with letters cannot match them
 * either way, so verify can hash the pin without first reading the OTP for its type.
 */
function normalizePin(pin: string): string {
  return pin.replace(/[\s-]/g, '').toUpperCase();
}
