import type { Socket } from 'node:dgram';
import type { IncomingCall } from '../../../sip/index.js';
import type { RtpBridge, WebRtcLeg } from '../../../webrtc/index.js';
import type { Call } from '../call.js';
import type { BrowserSide, CallSession, LocalEnd } from '../call-session.js';
import type { AnswerReading } from '../sdp.js';
import { closeRelay, relayToTrunk, untilBrowserEnds } from './browser-relay.js';

/** What the browser is told when its call ends before it was answered, by the call's final status. */
export function browserRejection(call: Pick<Call, 'status' | 'sipCode' | 'sipReason' | 'errorCode' | 'errorReason'>): { code: number; reason: string } {
  switch (call.status) {
    case 'busy':
      return { code: 486, reason: 'Busy Here' };
    case 'no-answer':
      return { code: 480, reason: 'No Answer' };
    case 'canceled':
      return { code: 487, reason: 'Request Terminated' };
    default: {
      if (call.errorCode === 'LIMIT_REACHED') return { code: 503, reason: `Limit reached: ${call.errorReason ?? ''}`.slice(0, 120) };
      if (call.errorCode === 'NO_TRUNK') return { code: 404, reason: 'No route to this number' };
      const code = call.sipCode !== null && call.sipCode >= 400 && call.sipCode < 700 ? call.sipCode : 503;
      return { code, reason: (call.errorReason ?? call.sipReason ?? 'Service Unavailable').slice(0, 120) };
    }
  }
}

/** The header naming the call's id in Ferry's answers to the browser (the page links its call log to GET /v1/voice/calls/:id). */
export const CALL_ID_HEADER = 'X-Ferry-Call-Id';

/**
 * One call placed from the dialer page: the browser's INVITE (held until the trunk answers), its WebRTC leg that Ferry
 * terminates, and the UDP socket the trunk sends its RTP to; relayed in G.711 both ways once the trunk answers.
 * The call itself (trunks, limits, billing, events) is an ordinary CallSession; this is its browser side.
 */
export class BrowserCall implements BrowserSide {
  private session: CallSession | null = null;
  private bridge: RtpBridge | null = null;
  private callId = '';
  private hangupWanted = false;
  private closed: Promise<void> | null = null;
  private ended = false;

  constructor(
    private readonly incoming: IncomingCall,
    private readonly leg: WebRtcLeg,
    private readonly answerSdp: string,
    private readonly socket: Socket,
    private readonly release: () => void,
  ) {
    // The person hangs up while it rings: CANCEL from the browser cancels the trunk's INVITE.
    incoming.on('cancelled', () => this.hangup());
  }

  get trunkPort(): number {
    return this.socket.address().port;
  }

  get codec() {
    return this.leg.codec;
  }

  /** The session carrying the call (set once it is admitted). */
  carriedBy(session: CallSession, callId: string): void {
    this.session = session;
    this.callId = callId;
    if (this.hangupWanted) session.hangup();
  }

  private hangup(): void {
    this.hangupWanted = true;
    this.session?.hangup();
  }

  status(call: Call): void {
    if (call.status === 'ringing') this.incoming.ring(180, undefined, [[CALL_ID_HEADER, call.id]]);
    else if (call.endedAt !== null || ['completed', 'failed', 'busy', 'no-answer', 'canceled'].includes(call.status)) this.finish(call);
  }

  /** Its final state: the browser's INVITE gets the matching failure, or an answered call a BYE. */
  finish(call: Pick<Call, 'status' | 'sipCode' | 'sipReason' | 'errorCode' | 'errorReason'>): void {
    if (this.ended) return;
    this.ended = true;
    if (this.incoming.state === 'offered') {
      const { code, reason } = browserRejection(call);
      this.incoming.reject(code, reason);
    } else this.incoming.bye();
  }

  async connect(answer: Extract<AnswerReading, { ok: true }>, signal: AbortSignal): Promise<LocalEnd | null> {
    this.bridge = await relayToTrunk(this.leg, this.socket, answer);
    if (signal.aborted) return null;
    this.incoming.answer(this.answerSdp, [[CALL_ID_HEADER, this.callId]]);
    return untilBrowserEnds(this.incoming, this.leg, signal);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      if (!this.ended) {
        this.ended = true;
        if (this.incoming.state === 'offered') this.incoming.reject(500, 'Server Internal Error');
        else this.incoming.bye();
      }
      await closeRelay(this.bridge, [this.leg], this.socket, this.release);
    })();
    return this.closed;
  }
}
