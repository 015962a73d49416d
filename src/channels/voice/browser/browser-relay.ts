import type { Socket } from 'node:dgram';
import { PAYLOAD_TYPE } from '../../../rtp/g711.js';
import type { EndInfo } from '../../../sip/index.js';
import { RtpBridge, type WebRtcLeg } from '../../../webrtc/index.js';
import type { LocalEnd } from '../call-session.js';
import type { AnswerReading } from '../sdp.js';

/** The SIP dialog with the browser, whichever side sent the INVITE. */
interface BrowserDialog {
  on(event: 'ended', fn: (info: EndInfo) => void): unknown;
  off(event: 'ended', fn: (info: EndInfo) => void): unknown;
}

/** Relays the browser's WebRTC leg to the trunk's RTP address (from its answer or offer) over the trunk-side socket. */
export function relayToTrunk(leg: WebRtcLeg, socket: Socket, trunk: Extract<AnswerReading, { ok: true }>): Promise<RtpBridge> {
  return RtpBridge.open(leg, {
    socket,
    remote: { address: trunk.remote.host, port: trunk.remote.port },
    codec: trunk.codec,
    payloadType: PAYLOAD_TYPE[trunk.codec],
    ...(trunk.dtmfPayloadType !== null ? { dtmfPayloadType: trunk.dtmfPayloadType } : {}),
  });
}

/**
 * Resolves with how the browser's side ended: it hung up (a normal end), or its audio connection failed; null when
 * `signal` aborts first (the call is ending for another reason).
 */
export function untilBrowserEnds(dialog: BrowserDialog, leg: WebRtcLeg, signal: AbortSignal): Promise<LocalEnd | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise<LocalEnd | null>((resolve) => {
    const done = (end: LocalEnd | null) => {
      dialog.off('ended', onEnded);
      leg.off('state', onState);
      signal.removeEventListener('abort', onAbort);
      resolve(end);
    };
    const onEnded = (info: EndInfo) => {
      if (info.by === 'remote') done({ code: 'CALLER_HANGUP', message: 'the browser hung up', status: 'completed' });
    };
    const onState = (state: string) => {
      if (state === 'failed' || state === 'closed') done({ code: 'BROWSER_MEDIA_FAILED', message: "the browser's audio connection failed", status: 'completed' });
    };
    const onAbort = () => done(null);
    dialog.on('ended', onEnded);
    leg.on('state', onState);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Stops the relay and the legs (a call to the browsers has one per browser rung), closes the trunk-side socket and gives the ports back. */
export async function closeRelay(bridge: RtpBridge | null, legs: readonly WebRtcLeg[], socket: Socket, release: () => void): Promise<void> {
  await bridge?.close();
  for (const leg of legs) await leg.close();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  release();
}
