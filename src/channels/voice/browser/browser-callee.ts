import type { Socket } from 'node:dgram';
import type { OutgoingCall } from '../../../sip/index.js';
import type { RtpBridge, WebRtcLeg } from '../../../webrtc/index.js';
import type { Call } from '../call.js';
import type { BrowserSide, LocalEnd, RingOutcome } from '../call-session.js';
import type { AnswerReading } from '../sdp.js';
import { closeRelay, relayToTrunk, untilBrowserEnds } from './browser-relay.js';

/**
 * A call coming in to a number routed to a dialer identity: Ferry's INVITE to one signed-in browser (with a WebRTC
 * offer Ferry made), and the UDP socket facing the trunk's RTP; relayed in G.711 once the browser answered and the
 * trunk's call was answered with that socket. The call itself is an ordinary inbound CallSession.
 */
export class BrowserCallee implements BrowserSide {
  private bridge: RtpBridge | null = null;
  private closed: Promise<void> | null = null;
  private answered = false;
  /** The browser's answer to the INVITE, whenever it comes (it may answer before the call is ready to ring). */
  private readonly outcome: Promise<RingOutcome>;

  constructor(
    private readonly invite: OutgoingCall,
    private readonly leg: WebRtcLeg,
    private readonly socket: Socket,
    private readonly release: () => void,
  ) {
    this.outcome = new Promise((resolve) => {
      invite.once('answered', (sdp) => {
        void leg.acceptAnswer(sdp).then(
          () => {
            this.answered = true;
            resolve({ answered: true });
          },
          () => {
            invite.bye();
            resolve({ answered: false, status: 'failed', code: 488, reason: 'Not Acceptable Here' });
          },
        );
      });
      invite.once('failed', (code, reason) =>
        resolve({ answered: false, status: code === 486 || code === 600 || code === 603 ? 'busy' : code === 487 ? 'canceled' : 'no-answer', code: code === 603 ? 486 : code, reason }),
      );
    });
  }

  get trunkPort(): number {
    return this.socket.address().port;
  }

  get codec() {
    return this.leg.codec;
  }

  status(_call: Call): void {
    // The browser hears the call's end as a BYE (close) or a CANCEL (ring's abort): nothing else to tell it.
  }

  /** Rings the browser until it answers, declines, the signal aborts (the caller gave up) or `timeoutMs` passes. */
  ring(signal: AbortSignal, timeoutMs: number): Promise<RingOutcome> {
    return new Promise((resolve) => {
      const done = (o: RingOutcome) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(o);
      };
      const timer = setTimeout(() => {
        this.invite.cancel();
        done({ answered: false, status: 'no-answer', code: 480, reason: 'No Answer' });
      }, timeoutMs);
      const onAbort = () => {
        this.invite.cancel();
        done({ answered: false, status: 'canceled', code: 487, reason: 'Request Terminated' });
      };
      signal.addEventListener('abort', onAbort, { once: true });
      void this.outcome.then(done);
    });
  }

  async connect(answer: Extract<AnswerReading, { ok: true }>, signal: AbortSignal): Promise<LocalEnd | null> {
    this.bridge = await relayToTrunk(this.leg, this.socket, answer);
    return untilBrowserEnds(this.invite, this.leg, signal);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      if (this.answered) this.invite.bye();
      else this.invite.cancel();
      await closeRelay(this.bridge, this.leg, this.socket, this.release);
    })();
    return this.closed;
  }
}
