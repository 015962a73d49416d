import type { Socket } from 'node:dgram';
import type { OutgoingCall } from '../../../sip/index.js';
import type { RtpBridge, WebRtcLeg } from '../../../webrtc/index.js';
import type { Call } from '../call.js';
import type { BrowserSide, LocalEnd, RingOutcome } from '../call-session.js';
import type { AnswerReading } from '../sdp.js';
import { closeRelay, relayToTrunk, untilBrowserEnds } from './browser-relay.js';

/** One signed-in browser rung for the call: Ferry's INVITE to it, with the WebRTC leg Ferry offered it. */
export interface CalleeBranch {
  invite: OutgoingCall;
  leg: WebRtcLeg;
}

type BranchFailure = Extract<RingOutcome, { answered: false }>;

/**
 * A call coming in to a number routed to a dialer identity: Ferry's INVITEs to every browser signed in under it here
 * (each with a WebRTC offer of its own), and the UDP socket facing the trunk's RTP. Forking as a SIP proxy does it
 * (RFC 3261 16.7): the first browser to answer takes the call and the others are cancelled; a browser declining
 * (4xx, 5xx) leaves the others ringing; a 6xx from any ends them all. With no browser left ringing, the caller hears
 * the best refusal: busy when someone declined, else the last one. The call itself is an ordinary inbound CallSession.
 */
export class BrowserCallee implements BrowserSide {
  private bridge: RtpBridge | null = null;
  private closed: Promise<void> | null = null;
  private winner: CalleeBranch | null = null;
  /** The outcome of ringing every branch, whenever it comes (a browser may answer before the call is ready to ring). */
  private readonly outcome: Promise<RingOutcome>;

  constructor(
    private readonly branches: CalleeBranch[],
    private readonly socket: Socket,
    private readonly release: () => void,
  ) {
    if (branches.length === 0) throw new Error('BrowserCallee: no browser to ring');
    this.outcome = new Promise((resolve) => {
      const failures: BranchFailure[] = [];
      let decided = false;
      const decide = (o: RingOutcome) => {
        if (decided) return;
        decided = true;
        resolve(o);
      };
      const failed = (f: BranchFailure) => {
        if (this.winner) return; // the others, cancelled once one answered
        failures.push(f);
        if (f.code >= 600) {
          for (const b of branches) b.invite.bye();
          return decide(f);
        }
        if (failures.length === branches.length) decide(failures.find((x) => x.status === 'busy') ?? f);
      };
      for (const branch of branches) {
        const { invite, leg } = branch;
        invite.once('answered', (sdp) => {
          // Answered after another took the call: hung up at once (its 200 was acknowledged by the SIP stack).
          if (this.winner || decided) return invite.bye();
          this.winner = branch;
          for (const other of branches) if (other !== branch) other.invite.bye();
          void leg.acceptAnswer(sdp).then(
            () => decide({ answered: true }),
            () => {
              invite.bye();
              decide({ answered: false, status: 'failed', code: 488, reason: 'Not Acceptable Here' });
            },
          );
        });
        invite.once('failed', (code, reason) =>
          failed({ answered: false, status: code === 486 || code === 600 || code === 603 ? 'busy' : code === 487 ? 'canceled' : 'no-answer', code: code === 603 ? 486 : code, reason }),
        );
      }
    });
  }

  get trunkPort(): number {
    return this.socket.address().port;
  }

  /** Every branch was offered the one codec the caller offered. */
  get codec() {
    return (this.winner ?? this.branches[0]).leg.codec;
  }

  status(_call: Call): void {
    // The browser hears the call's end as a BYE (close) or a CANCEL (ring's abort): nothing else to tell it.
  }

  /** Rings the browsers until one answers, all decline, the signal aborts (the caller gave up) or `timeoutMs` passes. */
  ring(signal: AbortSignal, timeoutMs: number): Promise<RingOutcome> {
    return new Promise((resolve) => {
      const done = (o: RingOutcome) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(o);
      };
      const cancelAll = () => {
        for (const b of this.branches) b.invite.cancel();
      };
      const timer = setTimeout(() => {
        cancelAll();
        done({ answered: false, status: 'no-answer', code: 480, reason: 'No Answer' });
      }, timeoutMs);
      const onAbort = () => {
        cancelAll();
        done({ answered: false, status: 'canceled', code: 487, reason: 'Request Terminated' });
      };
      signal.addEventListener('abort', onAbort, { once: true });
      void this.outcome.then(done);
    });
  }

  async connect(answer: Extract<AnswerReading, { ok: true }>, signal: AbortSignal): Promise<LocalEnd | null> {
    const winner = this.winner!;
    this.bridge = await relayToTrunk(winner.leg, this.socket, answer);
    return untilBrowserEnds(winner.invite, winner.leg, signal);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      for (const b of this.branches) b.invite.bye();
      await closeRelay(this.bridge, this.branches.map((b) => b.leg), this.socket, this.release);
    })();
    return this.closed;
  }
}
