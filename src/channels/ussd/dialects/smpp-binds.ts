import type { Logger } from 'pino';
import { Npi, Ton, UssdServiceOp } from '../../../smpp/constants.js';
import type { Tlvs } from '../../../smpp/tlv.js';
import type { OutboundMessage, SubmitOutcome, UpstreamMo } from '../../../smpp/upstream/outbound.js';
import { newId } from '../../../util/ids.js';
import { normalizeNumber } from '../../../numbers/phone.js';
import type { Answer, UssdCore } from '../session-core.js';
import { canonicalCode } from '../service-code.js';

const SEND_TRIES = 3;

/** its_session_info: octet 1 the session number; octet 2 the sequence number (bits 7-1) and end of session (bit 0). */
function sessionNumber(info: Buffer | undefined): string {
  return info && info.length ? String(info[0]) : '';
}
function endOfSession(info: Buffer | undefined): boolean {
  return !!info && info.length >= 2 && (info[1] & 1) === 1;
}

/**
 * USSD dialogues from the carrier over Ferry's upstream binds: a deliver_sm with ussd_service_op (PSSR indication:
 * the dialled string; USSR confirm: the phone's answer; its_session_info names the dialogue and carries the network's
 * end of session). The answer goes back on the same upstream as a submit_sm: USSR request to continue, PSSR response
 * (its_session_info with the end bit) to release.
 */
export class SmppUssdDialect {
  private readonly pending = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly o: {
      core: UssdCore;
      pool: { submit(msg: OutboundMessage, candidates: readonly string[]): Promise<SubmitOutcome> };
      log: Logger;
    },
  ) {}

  readonly handle = (mo: UpstreamMo): void => {
    if (this.closed) return;
    const p = this.dialogue(mo)
      .catch((err: Error) => this.o.log.warn({ upstream: mo.upstreamId, err: err.message }, 'USSD hop over SMPP failed'))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  };

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.pending]);
  }

  private async dialogue(mo: UpstreamMo): Promise<void> {
    const info = mo.pdu.tlvs?.its_session_info as Buffer | undefined;
    const op = mo.pdu.tlvs?.ussd_service_op;
    const phone = normalizeNumber(mo.source, { international: true }) ?? mo.source.replace(/^\+/, '');
    const key = `smpp:${mo.upstreamId}:${phone}:${sessionNumber(info)}`;
    if (endOfSession(info)) return this.o.core.networkEnd(key);
    const text = mo.text.trim();
    let answer: Answer | null = null;
    if (op !== UssdServiceOp.PSSR_INDICATION) answer = await this.o.core.input(key, text);
    if (!answer && op !== UssdServiceOp.USSR_CONFIRM) {
      const dialled = canonicalCode(text) ? text : mo.destination.trim();
      answer = await this.o.core.begin({ channel: 'smpp', networkKey: key, phone, dialled });
    }
    // A code no account claims is not answered over SMPP, as before the USSD module: the network ends the dialogue.
    // A reserved code (the OTP fallback) is answered without a session.
    if (answer?.sessionId || answer?.reserved) await this.send(mo, info, answer);
  }

  private async send(mo: UpstreamMo, info: Buffer | undefined, answer: Answer): Promise<void> {
    const tlvs: Tlvs = { ussd_service_op: answer.end ? UssdServiceOp.PSSR_RESPONSE : UssdServiceOp.USSR_REQUEST };
    if (info) tlvs.its_session_info = info.length >= 2 && answer.end ? Buffer.from([info[0], info[1] | 1]) : info;
    const msg: OutboundMessage = {
      id: newId('ussd_'),
      accountId: answer.reserved?.accountId ?? '',
      source: mo.destination,
      sourceTon: Ton.UNKNOWN,
      sourceNpi: Npi.UNKNOWN,
      destination: mo.source,
      text: answer.text,
      registeredDelivery: 0,
      priority: 1,
      serviceType: 'USSD',
      tlvs,
    };
    for (let attempt = 1; attempt <= SEND_TRIES; attempt++) {
      msg.attempt = attempt;
      const out = await this.o.pool.submit(msg, [mo.upstreamId]);
      if (out.kind === 'accepted') return;
      if (out.kind === 'failed' || attempt === SEND_TRIES) {
        this.o.log.warn({ upstream: mo.upstreamId, session: answer.sessionId, outcome: out.kind }, 'USSD screen not sent');
        return;
      }
      await new Promise((r) => setTimeout(r, Math.min(out.delayMs, 500)));
    }
  }
}
