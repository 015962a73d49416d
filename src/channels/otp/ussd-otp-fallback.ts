import type { Logger } from 'pino';
import { Npi, Ton, UssdServiceOp } from '../../smpp/constants.js';
import type { Tlvs } from '../../smpp/tlv.js';
import type { OutboundMessage, SubmitOutcome, UpstreamMo } from '../../smpp/upstream/outbound.js';
import { newId } from '../../util/ids.js';
import { normalizeNumber } from '../../numbers/phone.js';
import type { OtpMetrics, OtpUssdOutcome } from './otp-metrics.js';
import type { OtpService, PendingOtp } from './otp-service.js';

export interface UssdOtpFallbackOptions {
  otp: Pick<OtpService, 'pendingForPhone' | 'now'>;
  /** Where the answer goes: the upstream the session came from (a USSD dialogue is bound to it). */
  pool: { submit(msg: OutboundMessage, candidates: readonly string[]): Promise<SubmitOutcome> };
  /** e.g. *889*142# */
  serviceCode: string;
  log?: Logger;
  metrics?: OtpMetrics;
  /** USSD sessions for other service codes (the USSD channel, once it exists); without it they are dropped. */
  next?: (mo: UpstreamMo) => void | Promise<void>;
}

/** A USSD answer fits 182 characters: a few codes at most. */
const MAX_CODES = 3;
const SEND_TRIES = 3;

/** Remaining validity as people read it: "4 min", "2 h 5 min". */
export function remainingText(ms: number): string {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  if (minutes < 60) return `${minutes} min`;
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return m ? `${h} h ${m} min` : `${h} h`;
}

/** The answer text: the pending code(s) with their remaining validity, or "No pending code". */
export function ussdAnswer(pending: readonly PendingOtp[], now: number): string {
  if (!pending.length) return 'No pending code';
  if (pending.length === 1) return `Your code is ${pending[0].code}, valid ${remainingText(pending[0].expiresAt - now)}`;
  const list = pending.slice(0, MAX_CODES).map((p) => `${p.code} from ${p.sender}, valid ${remainingText(p.expiresAt - now)}`);
  return `Your codes: ${list.join('; ')}`;
}

/**
 * The OTP USSD fallback (spec §4 rule 4): a phone dialling the service code hears its pending code and how long it
 * stays valid, or "No pending code". The dialler names no account, so every account's active OTP for the phone is
 * looked up (store.activeForPhone); the caller's number is authenticated by the network, so it only ever hears codes
 * that were sent to it. Nothing changes on the OTP (id, expiry, attempts). The answer is a PSSR response submitted
 * to the same upstream, echoing its_session_info; it is session-bound, not a ledger message. `handle` is the SMPP
 * path when the USSD module is not running; with it, the USSD core answers through `reservedHandler`.
 */
export class UssdOtpFallback {
  private readonly pending = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly o: UssdOtpFallbackOptions) {}

  /** ReceiptService's onUssd: answers in the background so the deliver_sm is acknowledged at once. */
  readonly handle = (mo: UpstreamMo): void | Promise<void> => {
    if (!this.isOurs(mo)) return this.o.next?.(mo);
    if (this.closed) return;
    const p = this.answer(mo).finally(() => this.pending.delete(p));
    this.pending.add(p);
  };

  /** Waits for answers under way; later sessions are ignored. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.pending]);
  }

  private isOurs(mo: UpstreamMo): boolean {
    const code = this.o.serviceCode;
    return mo.destination.trim() === code || mo.text.trim() === code;
  }

  /**
   * The fallback as a reserved code of the USSD session core, which serves it on every USSD ingress (SMPP,
   * aggregator callbacks, simulate). A dial that names an account (an aggregator connector, simulate: the account,
   * not the network, vouches for the phone number) hears only that account's codes.
   */
  reservedHandler() {
    return {
      name: 'otp',
      serviceCode: this.o.serviceCode,
      answer: async (dial: { channel: string; phone: string; accountId?: string }): Promise<{ text: string; accountId?: string }> => {
        const r = await this.lookup(dial.phone, dial.accountId, dial.channel);
        this.o.metrics?.ussdLookup(r.outcome);
        return { text: r.text, accountId: r.accountId || undefined };
      },
    };
  }

  /** The answer for a phone (any form), optionally only from one account's OTPs; never throws. */
  private async lookup(source: string, onlyAccount: string | undefined, via: string): Promise<{ text: string; accountId: string; outcome: OtpUssdOutcome }> {
    try {
      const phone = normalizeNumber(source, { international: true });
      let pending = phone ? await this.o.otp.pendingForPhone(phone) : [];
      if (onlyAccount) pending = pending.filter((p) => p.accountId === onlyAccount);
      return { text: ussdAnswer(pending, this.o.otp.now()), accountId: pending[0]?.accountId ?? '', outcome: pending.length ? 'answered' : 'no_pending' };
    } catch (err) {
      this.o.log?.warn({ via, err: (err as Error).message }, 'USSD OTP lookup failed');
      return { text: 'Service unavailable, please try again later', accountId: '', outcome: 'failed' };
    }
  }

  private async answer(mo: UpstreamMo): Promise<void> {
    const { text, accountId, outcome } = await this.lookup(mo.source, undefined, `upstream ${mo.upstreamId}`);
    const tlvs: Tlvs = { ussd_service_op: UssdServiceOp.PSSR_RESPONSE };
    const session = mo.pdu.tlvs?.its_session_info;
    if (session !== undefined) tlvs.its_session_info = session;
    const msg: OutboundMessage = {
      id: newId('ussd_'),
      accountId,
      source: mo.destination,
      sourceTon: Ton.UNKNOWN,
      sourceNpi: Npi.UNKNOWN,
      destination: mo.source,
      text,
      registeredDelivery: 0,
      priority: 1,
      serviceType: 'USSD',
      tlvs,
    };
    // The text may hold a code: log outcomes only.
    for (let attempt = 1; attempt <= SEND_TRIES; attempt++) {
      msg.attempt = attempt;
      const out = await this.o.pool.submit(msg, [mo.upstreamId]);
      if (out.kind === 'accepted') return this.o.metrics?.ussdLookup(outcome);
      if (out.kind === 'failed' || attempt === SEND_TRIES) {
        this.o.metrics?.ussdLookup('failed');
        this.o.log?.warn({ upstream: mo.upstreamId, outcome: out.kind, status: out.kind === 'failed' ? out.statusName : out.reason }, 'USSD OTP answer not sent');
        return;
      }
      // A session lasts seconds: only short waits are worth it.
      await new Promise((r) => setTimeout(r, Math.min(out.delayMs, 500)));
    }
  }
}
