/**
 * One WebRTC audio leg that Ferry terminates (werift: ICE, DTLS-SRTP): it answers a browser's offer choosing G.711,
 * hands out the decrypted RTP payloads and sends payloads back, so a trunk leg can be bridged without transcoding.
 * Candidates are host candidates on one configured address only (no interface scan, no STUN unless configured).
 */
import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import type { MediaStreamTrack, RTCPeerConnection, RTCRtpCodecParameters, RTCRtpTransceiver, RtpPacket } from 'werift';
import { DtmfReceiver } from '../rtp/dtmf.js';
import { PAYLOAD_TYPE, SAMPLE_RATE, type G711Codec } from '../rtp/g711.js';
import type { PortRange } from '../rtp/port-pool.js';
import { chooseCodecs, offeredAudioCodecs, restrictAudioCodecs, WebRtcNegotiationError } from './sdp-codecs.js';
import { loadWerift } from './werift.js';

export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

export interface WebRtcLegOptions {
  /** The one address host candidates are gathered (and sockets bound) on (default 127.0.0.1). */
  host?: string;
  /** STUN/TURN servers; none by default, so nothing leaves the host unasked. */
  iceServers?: IceServer[];
  /** Where the ICE socket's port is taken from (default: any free port). */
  portRange?: PortRange;
  /** The G.711 codecs acceptable, in order of preference (default PCMU, PCMA). */
  codecs?: readonly G711Codec[];
  /** Negotiate telephone-event at 8 kHz (default true). */
  dtmf?: boolean;
  /** Give up ICE gathering after this long and answer with what is gathered (default 5000 ms). */
  gatherTimeoutMs?: number;
  /** A leg not connected this long after its description is set goes `failed` and closes (default 20000 ms). */
  connectTimeoutMs?: number;
}

/** One received RTP packet, decrypted. */
export interface WebRtcRtp {
  payload: Buffer;
  payloadType: number;
  timestamp: number;
  marker: boolean;
  sequence: number;
  ssrc: number;
}

export interface SendRtpOptions {
  timestamp: number;
  marker?: boolean;
  /** Default: the negotiated codec's payload type. */
  payloadType?: number;
}

export type WebRtcLegState = 'new' | 'connected' | 'failed' | 'closed';

export interface WebRtcLegEvents {
  rtp: [packet: WebRtcRtp];
  /** A key pressed at the far end (RFC 4733 telephone-event), once per key press. */
  dtmf: [digit: string];
  state: [state: Exclude<WebRtcLegState, 'new'>];
}

/** Audio codec parameters as werift wants them; telephone-event's PT is the commonest browsers offer at 8 kHz. */
const OFFER_DTMF_PAYLOAD_TYPE = 101;
const DEFAULT_CODECS: readonly G711Codec[] = ['PCMU', 'PCMA'];

export class WebRtcLeg extends EventEmitter<WebRtcLegEvents> {
  private currentState: WebRtcLegState = 'new';
  private negotiatedCodec: G711Codec | undefined;
  private negotiatedPayloadType: number | undefined;
  private negotiatedDtmf: number | undefined;
  private readonly dtmfReceiver = new DtmfReceiver();
  private sequence = Math.floor(Math.random() * 0x10000);
  private connectTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private readonly createdAt = performance.now();
  private connectedAt: number | undefined;
  private counts = { received: 0, sent: 0, notSent: 0 };

  private constructor(
    private readonly werift: typeof import('werift'),
    private readonly pc: RTCPeerConnection,
    private readonly transceiver: RTCRtpTransceiver,
    private readonly options: WebRtcLegOptions,
  ) {
    super();
    transceiver.onTrack.subscribe((track) => this.receiveFrom(track));
    pc.connectionStateChange.subscribe((state) => {
      if (state === 'connected') this.setState('connected');
      else if (state === 'failed') void this.fail();
    });
  }

  /**
   * Answers a browser's offer (one audio section, non-trickle: the answer carries all candidates). Rejects with
   * WebRtcNegotiationError when the offer has none of the acceptable codecs.
   */
  static async answer(offerSdp: string, options: WebRtcLegOptions = {}): Promise<{ leg: WebRtcLeg; answerSdp: string }> {
    const chosen = chooseCodecs(offeredAudioCodecs(offerSdp), options.codecs ?? DEFAULT_CODECS, options.dtmf ?? true);
    const keep = chosen.dtmfPayloadType === undefined ? [chosen.payloadType] : [chosen.payloadType, chosen.dtmfPayloadType];
    const werift = await loadWerift();
    const codecs = [codecParameters(werift, chosen.codec, chosen.payloadType)];
    if (chosen.dtmfPayloadType !== undefined) codecs.push(dtmfParameters(werift, chosen.dtmfPayloadType));
    const leg = WebRtcLeg.create(werift, codecs, options);
    try {
      // Narrowed to the chosen codec so the answer names exactly what will flow.
      await leg.pc.setRemoteDescription({ type: 'offer', sdp: restrictAudioCodecs(offerSdp, keep) });
      leg.learnCodecs();
      await leg.pc.setLocalDescription(await leg.pc.createAnswer());
      const answerSdp = await leg.gatheredDescription();
      leg.armConnectTimer();
      return { leg, answerSdp };
    } catch (error) {
      await leg.close();
      throw error;
    }
  }

  /** Makes an offer, as a browser would (Node-side peers, tests); the answer goes to acceptAnswer(). */
  static async offer(options: WebRtcLegOptions = {}): Promise<{ leg: WebRtcLeg; offerSdp: string }> {
    const werift = await loadWerift();
    const codecs = (options.codecs ?? DEFAULT_CODECS).map((codec) => codecParameters(werift, codec, PAYLOAD_TYPE[codec]));
    if (options.dtmf ?? true) codecs.push(dtmfParameters(werift, OFFER_DTMF_PAYLOAD_TYPE));
    const leg = WebRtcLeg.create(werift, codecs, options);
    try {
      await leg.pc.setLocalDescription(await leg.pc.createOffer());
      return { leg, offerSdp: await leg.gatheredDescription() };
    } catch (error) {
      await leg.close();
      throw error;
    }
  }

  private static create(werift: typeof import('werift'), codecs: RTCRtpCodecParameters[], options: WebRtcLegOptions): WebRtcLeg {
    const host = options.host ?? '127.0.0.1';
    const family = isIP(host);
    if (family === 0) throw new RangeError(`WebRTC host must be an IP address, not ${JSON.stringify(host)}`);
    const range = options.portRange;
    const pc = new werift.RTCPeerConnection({
      codecs: { audio: codecs, video: [] },
      headerExtensions: { audio: [], video: [] },
      // werift's default is a public STUN server: nothing is contacted unless configured.
      iceServers: options.iceServers ?? [],
      icePortRange: range ? [range.min, range.max] : undefined,
      // No interface scan: the one configured address is the only host candidate, and sockets bind to it.
      iceUseIpv4: false,
      iceUseIpv6: false,
      iceAdditionalHostAddresses: [host],
      iceInterfaceAddresses: family === 6 ? { udp6: host } : { udp4: host },
    });
    const transceiver = pc.addTransceiver('audio', { direction: 'sendrecv' });
    return new WebRtcLeg(werift, pc, transceiver, options);
  }

  /** The offerer's side: applies the answer; the leg connects after it. */
  async acceptAnswer(answerSdp: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answerSdp });
    this.learnCodecs();
    this.armConnectTimer();
  }

  get state(): WebRtcLegState {
    return this.currentState;
  }

  /** The negotiated G.711 codec (known once both descriptions are set). */
  get codec(): G711Codec {
    if (!this.negotiatedCodec) throw new Error('the WebRTC leg has not negotiated yet');
    return this.negotiatedCodec;
  }

  get payloadType(): number {
    if (this.negotiatedPayloadType === undefined) throw new Error('the WebRTC leg has not negotiated yet');
    return this.negotiatedPayloadType;
  }

  /** The telephone-event payload type, when negotiated. */
  get dtmfPayloadType(): number | undefined {
    return this.negotiatedDtmf;
  }

  /** Milliseconds from the leg's creation to `connected` (ICE and DTLS done), once connected. */
  get connectMs(): number | undefined {
    return this.connectedAt === undefined ? undefined : this.connectedAt - this.createdAt;
  }

  get stats(): { received: number; sent: number; notSent: number } {
    return { ...this.counts };
  }

  /** Resolves once connected; rejects when the leg fails or closes first. */
  connected(): Promise<void> {
    if (this.currentState === 'connected') return Promise.resolve();
    if (this.currentState !== 'new') return Promise.reject(new Error(`the WebRTC leg is ${this.currentState}`));
    return new Promise((resolve, reject) => {
      const onState = (state: Exclude<WebRtcLegState, 'new'>): void => {
        this.off('state', onState);
        if (state === 'connected') resolve();
        else reject(new Error(`the WebRTC leg ${state} before connecting`));
      };
      this.on('state', onState);
    });
  }

  /**
   * Sends one payload (SRTP) with the leg's own SSRC and sequence; false when it cannot go out (not connected).
   * The caller owns the timestamp, so a relayed stream keeps its timing.
   */
  sendRtp(payload: Buffer, options: SendRtpOptions): boolean {
    if (this.currentState !== 'connected' || this.negotiatedPayloadType === undefined) {
      this.counts.notSent++;
      return false;
    }
    const sender = this.transceiver.sender;
    const payloadType = options.payloadType ?? this.negotiatedPayloadType;
    const header = new this.werift.RtpHeader({
      payloadType,
      sequenceNumber: this.sequence,
      timestamp: options.timestamp >>> 0,
      marker: options.marker ?? false,
      ssrc: sender.ssrc,
    });
    this.sequence = (this.sequence + 1) & 0xffff;
    this.counts.sent++;
    // werift's sender stamps every packet with the first codec's type (and keeps RTCP sender reports going), so
    // other types (telephone-event) go straight to the SRTP transport in the same sequence space.
    const sent = payloadType === this.negotiatedPayloadType ? sender.sendRtp(new this.werift.RtpPacket(header, payload)) : sender.dtlsTransport.sendRtp(payload, header);
    sent.catch(() => this.counts.notSent++);
    return true;
  }

  /** Stops ICE, DTLS and the sockets; `state` 'closed' follows (once). */
  close(): Promise<void> {
    this.closing ??= this.shutDown('closed');
    return this.closing;
  }

  private fail(): Promise<void> {
    this.closing ??= this.shutDown('failed');
    return this.closing;
  }

  private async shutDown(reason: 'closed' | 'failed'): Promise<void> {
    clearTimeout(this.connectTimer);
    try {
      await this.pc.close();
    } finally {
      this.setState(reason);
      if (reason === 'failed') this.setState('closed');
    }
  }

  private setState(state: Exclude<WebRtcLegState, 'new'>): void {
    if (this.currentState === state || this.currentState === 'closed') return;
    if (state === 'connected' && this.currentState !== 'new') return;
    this.currentState = state;
    if (state === 'connected') {
      this.connectedAt = performance.now();
      clearTimeout(this.connectTimer);
    }
    this.emit('state', state);
  }

  private armConnectTimer(): void {
    if (this.currentState !== 'new' || this.connectTimer) return;
    this.connectTimer = setTimeout(() => void this.fail(), this.options.connectTimeoutMs ?? 20_000);
    this.connectTimer.unref();
  }

  /** The codec and telephone-event type both descriptions agree on (werift keeps the remote's payload types). */
  private learnCodecs(): void {
    const codecs = this.transceiver.codecs;
    const audio = codecs.find((c) => c.clockRate === SAMPLE_RATE && (c.name.toUpperCase() === 'PCMU' || c.name.toUpperCase() === 'PCMA'));
    if (!audio) throw new WebRtcNegotiationError(`no G.711 codec was negotiated (got: ${codecs.map((c) => c.mimeType).join(' ') || 'none'})`);
    if (codecs[0] !== audio) throw new WebRtcNegotiationError(`the first negotiated codec is ${codecs[0].mimeType}, not G.711`);
    this.negotiatedCodec = audio.name.toUpperCase() as G711Codec;
    this.negotiatedPayloadType = audio.payloadType;
    this.negotiatedDtmf = codecs.find((c) => c.name.toLowerCase() === 'telephone-event' && c.clockRate === SAMPLE_RATE)?.payloadType;
  }

  /** The local description once gathering completes (or its time is up): non-trickle signalling needs every candidate. */
  private async gatheredDescription(): Promise<string> {
    if (this.pc.iceGatheringState !== 'complete') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.options.gatherTimeoutMs ?? 5000);
        const { unSubscribe } = this.pc.iceGatheringStateChange.subscribe((state) => {
          if (state === 'complete') done();
        });
        function done(): void {
          clearTimeout(timer);
          unSubscribe();
          resolve();
        }
        // It may have completed between the check and the subscription.
        if (this.pc.iceGatheringState === 'complete') done();
      });
    }
    const description = this.pc.localDescription;
    if (!description) throw new Error('werift produced no local description');
    return description.sdp;
  }

  private receiveFrom(track: MediaStreamTrack): void {
    track.onReceiveRtp.subscribe((packet: RtpPacket) => {
      if (this.currentState === 'closed') return;
      const { header, payload } = packet;
      this.counts.received++;
      if (header.payloadType === this.negotiatedDtmf) {
        const digit = this.dtmfReceiver.push(header.timestamp, payload);
        if (digit !== undefined) this.emit('dtmf', digit);
      }
      this.emit('rtp', { payload, payloadType: header.payloadType, timestamp: header.timestamp, marker: header.marker, sequence: header.sequenceNumber, ssrc: header.ssrc });
    });
  }
}

function codecParameters(werift: typeof import('werift'), codec: G711Codec, payloadType: number): RTCRtpCodecParameters {
  return new werift.RTCRtpCodecParameters({ mimeType: `audio/${codec}`, clockRate: SAMPLE_RATE, payloadType });
}

function dtmfParameters(werift: typeof import('werift'), payloadType: number): RTCRtpCodecParameters {
  return new werift.RTCRtpCodecParameters({ mimeType: 'audio/telephone-event', clockRate: SAMPLE_RATE, payloadType, parameters: '0-16' });
}
