import { UssdServiceOp } from '../../smpp/constants.js';
import type { ReceivedMessage, SmscSimulator } from '../smpp/simulator.js';

/** One screen as a handset shows it. */
export interface PhoneScreen {
  text: string;
  /** The network released the dialogue with this screen (PSSR response): no more input. */
  end: boolean;
  /** The its_session_info session number of the dialogue (give it back with the next input). */
  session: number;
}

const isUssdTo = (phone: string, session: number) => (m: ReceivedMessage) =>
  m.destinations[0] === phone && m.tlvs?.ussd_service_op !== undefined && (m.tlvs?.its_session_info as Buffer | undefined)?.[0] === session;

let nextSession = Math.floor(Math.random() * 200);

/**
 * A USSD handset on the SMSC simulator: dials a code and answers screens as the network would carry them over SMPP
 * (deliver_sm with ussd_service_op PSSR indication / USSR confirm and its_session_info; the ESME's screen comes back
 * as a submit_sm with USSR request to continue or PSSR response to release). Used by `ferry ussd dial` through the
 * admin API, and by tests.
 */
export class UssdPhone {
  constructor(
    private readonly sim: SmscSimulator,
    private readonly timeoutMs = 10_000,
  ) {}

  /** Dials `code` from `phone`; resolves with the first screen. */
  dial(phone: string, code: string, session = (nextSession = (nextSession + 1) % 256)): Promise<PhoneScreen> {
    return this.exchange(phone, session, code, UssdServiceOp.PSSR_INDICATION, 0, code);
  }

  /** Answers the screen of dialogue `session`; resolves with the next screen. */
  reply(phone: string, session: number, input: string, destination = ''): Promise<PhoneScreen> {
    return this.exchange(phone, session, input, UssdServiceOp.USSR_CONFIRM, 0, destination);
  }

  /** The phone hangs up (or the network times out): a deliver_sm with the end-of-session bit. */
  async release(phone: string, session: number, destination = ''): Promise<void> {
    await this.sim.injectUssd({ source: phone, destination, text: '', op: UssdServiceOp.USSR_CONFIRM, sessionInfo: Buffer.from([session, 1]) });
  }

  private async exchange(phone: string, session: number, text: string, op: number, seq: number, destination: string): Promise<PhoneScreen> {
    const match = isUssdTo(phone, session);
    const before = this.sim.received().filter(match).length;
    await this.sim.injectUssd({ source: phone, destination, text, op, sessionInfo: Buffer.from([session, seq << 1]) });
    const until = Date.now() + this.timeoutMs;
    for (;;) {
      const got = this.sim.received().filter(match);
      if (got.length > before) {
        const m = got[got.length - 1];
        return { text: m.text, end: m.tlvs?.ussd_service_op === UssdServiceOp.PSSR_RESPONSE, session };
      }
      if (Date.now() > until) throw new Error(`no USSD screen for ${phone} within ${this.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}
