import { buildOffer, readAnswer } from '../../../../src/channels/voice/sdp.js';
import { MediaEngine, type MediaHandle } from '../../../../src/rtp/index.js';
import { UserAgent, type OutgoingCall } from '../../../../src/sip/index.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TrunkCall {
  sip: OutgoingCall;
  /** Our side's media (recording what Ferry sends). */
  media: MediaHandle;
  /** Resolves true once Ferry answers (our media then points at Ferry's), false with its refusal's code. */
  outcome: Promise<{ answered: boolean; code: number }>;
  /** The redirects the call followed (code, Contact URI), in order. */
  redirects: Array<{ code: number; uri: string }>;
}

export interface TrunkCallOptions {
  /** The Request-URI (default `sip:<to>@127.0.0.1:<ferrySipPort>`), e.g. with a hop marker as a redirect's Contact has. */
  requestUri?: string;
  /** Follow a 302 once, as carriers do (default true); false: the 302 ends the call, its code in `outcome`. */
  followRedirect?: boolean;
}

/**
 * A carrier calling Ferry: Ferry's own SIP and RTP stacks on 127.0.0.1 (the embedded trunk simulator's address, so
 * Ferry takes it for a configured trunk), sending INVITEs to Ferry's SIP port and following a redirect once, as real
 * carriers do. Closed at the test's teardown.
 */
export async function trunkCaller(t: Teardown, o: { ferrySipPort: number; from: string; mediaPorts: { min: number; max: number } }) {
  const ua = await UserAgent.create({ host: '127.0.0.1', port: 0 });
  t.teardown(() => ua.close());
  const engine = await MediaEngine.start({ workers: 1, portRange: o.mediaPorts, host: '127.0.0.1' });
  t.teardown(() => engine.close());
  let session = 0;
  return {
    async call(to: string, c: TrunkCallOptions = {}): Promise<TrunkCall> {
      const media = await engine.open({ codec: 'PCMU', continuous: true, record: { maxSeconds: 60 } });
      const sip = ua.invite({
        target: { host: '127.0.0.1', port: o.ferrySipPort, transport: 'udp' },
        requestUri: c.requestUri ?? `sip:${to}@127.0.0.1:${o.ferrySipPort}`,
        from: `<sip:${o.from}@127.0.0.1>`,
        to: `<sip:${to}@127.0.0.1>`,
        sdp: buildOffer({ host: '127.0.0.1', port: media.localPort, sessionId: ++session }),
        followRedirects: c.followRedirect === false ? 0 : 1,
      });
      const redirects: TrunkCall['redirects'] = [];
      sip.on('redirected', (code, uri) => redirects.push({ code, uri }));
      const outcome = new Promise<{ answered: boolean; code: number }>((resolve) => {
        sip.once('answered', (sdp) => {
          const answer = readAnswer(sdp);
          if (answer.ok) media.setRemote(answer.remote, { codec: answer.codec, dtmfPayloadType: answer.dtmfPayloadType ?? undefined });
          resolve({ answered: true, code: 200 });
        });
        sip.once('failed', (code) => resolve({ answered: false, code }));
      });
      return { sip, media, outcome, redirects };
    },
  };
}
