/**
 * One RTP session: an RTP socket on an even port and RTCP on the next, sending 20 ms G.711 frames and RFC 4733
 * events when its scheduler ticks, receiving audio (decoded, optionally recorded or cut into utterances by a VAD),
 * digits and RTCP. It has no clock of its own: a FrameScheduler (one for many sessions) calls tick().
 * Two sessions of one thread can be bridged (bridgeWith): each sends on what the other receives.
 */
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { randomInt } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { DEFAULT_DTMF_PAYLOAD_TYPE, DtmfReceiver, dtmfEventCode, telephoneEventPackets, writeTelephoneEvent, type TelephoneEventPacket } from './dtmf.js';
import { InbandDtmfDetector } from './dtmf-detector.js';
import { codecOfPayloadType, decodeG711, encodeG711, FRAME_SAMPLES, PAYLOAD_TYPE, SAMPLE_RATE, silenceOctet, transcodingTable, type G711Codec } from './g711.js';
import { PacingHistogram, type PacingSummary } from './pacing-histogram.js';
import { RtpReceiveStats } from './receive-stats.js';
import { RelayBuffer } from './relay-buffer.js';
import { buildRtcpReport, ntpMiddle, ntpTime, parseRtcp, type ReportBlock, type RtcpCompound } from './rtcp.js';
import { SpeechProfiler, type SpeechRun } from './speech-profiler.js';
import { addTimestamp, decodeRtp, emptyRtpPacket, RTP_HEADER_LENGTH, timestampDelta, writeRtpHeader } from './rtp-packet.js';
import { Vad, type VadMode } from '../audio/vad.js';
import { UtteranceSegmenter, type UtteranceInfo, type UtteranceSegmenterOptions } from '../audio/utterance-segmenter.js';

export interface RemoteAddress {
  host: string;
  port: number;
}

/**
 * Turn-taking on the received audio: WebRTC VAD and an UtteranceSegmenter (its options: startMs, endSilenceMs,
 * maxUtteranceMs, preRollMs), giving `speechStart` and `utterance` events.
 */
export interface ListenOptions extends UtteranceSegmenterOptions {
  /** The VAD's aggressiveness, 0-3 (default 2). */
  vadMode?: VadMode;
}

/** How a queued playback ended: played out, or dropped by interrupt() (barge-in). */
export type PlaybackEnd = 'finished' | 'interrupted';

export interface MediaSessionOptions {
  codec: G711Codec;
  /** RFC 4733 payload type, as negotiated (default 101). */
  dtmfPayloadType?: number;
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** From the SDP answer; can come later (setRemote) or from the first packets (symmetric). */
  remote?: RemoteAddress;
  /** Symmetric RTP: send to wherever the first valid RTP packet came from (NAT), over what signalling said. */
  symmetric?: boolean;
  /** Keep the received audio, up to this many seconds (then recording stops). */
  record?: { maxSeconds: number };
  /** Also look for DTMF tones in the received audio (default false: RFC 4733 only). */
  inbandDtmf?: boolean;
  /** Milliseconds without a received packet before `rtpTimeout` (default 0: never). */
  rtpTimeoutMs?: number;
  /** RTCP report interval (default 5000 ms). */
  rtcpIntervalMs?: number;
  cname?: string;
  /** Key hold for sent digits (default 100 ms). */
  digitMs?: number;
  /**
   * Send silence while nothing is queued, as a phone does (default false: nothing is sent between prompts). Carriers'
   * border controllers hang up calls whose RTP stops for a while, so a call on hold between steps keeps streaming.
   */
  continuous?: boolean;
  /** Profile the far end's speech over its first `windowMs` of audio (`speechProfile` event), for answering-machine detection. */
  speechProfile?: { windowMs: number };
  /** Segment the far end's speech into utterances (VAD in this thread, on the decoded audio). */
  listen?: ListenOptions;
}

export interface MediaSessionStats {
  localPort: number;
  packetsSent: number;
  /** Payload octets sent (RTCP's sender octet count). */
  bytesSent: number;
  packetsReceived: number;
  bytesReceived: number;
  /** Expected − received (RFC 3550 A.3), for the source we receive. */
  lost: number;
  outOfOrder: number;
  malformed: number;
  /** Received interarrival jitter (RFC 3550 A.8), ms. */
  jitterMs: number;
  digitsSent: number;
  digitsReceived: number;
  rtcpSent: number;
  rtcpReceived: number;
  /** Each sent packet's send time against its 20 ms slot. */
  pacing: PacingSummary;
  /** The last report block the remote sent about our stream. */
  remoteReport?: ReportBlock;
}

export type DigitSource = 'rfc4733' | 'inband';

export interface MediaSessionEvents {
  digit: [digit: string, source: DigitSource];
  playbackDone: [end: PlaybackEnd];
  rtpTimeout: [];
  speechProfile: [runs: SpeechRun[]];
  /** The far end started speaking, `atMs` into its audio (ListenOptions). */
  speechStart: [atMs: number];
  /** The far end's utterance: its audio (a fresh copy, 8 kHz) and timings (ListenOptions). */
  utterance: [pcm: Int16Array, info: UtteranceInfo];
  rtcp: [report: RtcpCompound];
  error: [error: Error];
}

const SEND_RING = 8;
const MAX_PAYLOAD = 1500;
const NS_PER_TIMESTAMP_UNIT = 1e9 / SAMPLE_RATE;
/**
 * A far end that sends nothing in silence (DTX, comfort noise) would hold an utterance open: after this many ticks
 * without audio, each tick counts as a silent frame. Longer than network jitter, short against endSilenceMs.
 */
const DTX_GAP_TICKS = 5;
const SILENT_FRAME = new Int16Array(FRAME_SAMPLES);

/** What the SDP answer settled, given with the remote address: the codec and the telephone-event payload type. */
export interface Negotiated {
  codec?: G711Codec;
  dtmfPayloadType?: number;
}

export class MediaSession extends EventEmitter<MediaSessionEvents> {
  codec: G711Codec;
  payloadType: number;
  dtmfPayloadType: number;
  private remote: RemoteAddress | undefined;
  private latched = false;
  private readonly symmetric: boolean;
  private closed = false;

  // Sending
  private readonly ssrc = randomInt(0, 0x100000000);
  private sequence = randomInt(0, 0x10000);
  private timestamp = randomInt(0, 0x100000000);
  /** Packets waiting in the kernel may still reference their buffer, so sends rotate through a small ring. */
  private readonly sendRing: Buffer[];
  private readonly eventRing: Buffer[];
  private ringNext = 0;
  private readonly frame = new Int16Array(FRAME_SAMPLES);
  private readonly queue: Int16Array[] = [];
  private queueOffset = 0;
  private playing = false;
  private sentAudioLastTick = false;
  private readonly continuous: boolean;
  private readonly profiler: SpeechProfiler | null;
  /** When the far end's first audio arrived: the profile closes a window later even if its audio stops. */
  private profileStartNs: bigint | null = null;
  private readonly digitQueue: string[] = [];
  private event: { packets: TelephoneEventPacket[]; next: number; timestamp: number } | undefined;
  private readonly digitMs: number;
  private readonly pacing = new PacingHistogram();
  // Bridging: the session whose far end hears ours, and the audio it handed us to send (both set by bridgeWith).
  private bridgePeer: MediaSession | null = null;
  private relay: RelayBuffer | null = null;
  private mixScratch: Int16Array | null = null;
  private packetsSent = 0;
  private bytesSent = 0;
  private digitsSent = 0;

  // Receiving
  private readonly received = emptyRtpPacket();
  private readonly receiveStats = new RtpReceiveStats();
  private readonly dtmfReceiver = new DtmfReceiver();
  private readonly inband: InbandDtmfDetector | undefined;
  private readonly decoded = new Int16Array(MAX_PAYLOAD);
  private readonly recording: Int16Array | undefined;
  private recordingLength = 0;
  private recordingFirstTimestamp: number | undefined;
  private recordingFull = false;
  private remoteSsrc: number | undefined;
  private readonly vad: Vad | null;
  private readonly segmenter: UtteranceSegmenter | null;
  private listening = true;
  private heardAudio = false;
  private ticksSinceAudio = 0;
  private packetsReceived = 0;
  private bytesReceived = 0;
  private malformed = 0;
  private digitsReceived = 0;
  private readonly startNs = process.hrtime.bigint();
  private lastReceiveNs: bigint;
  private readonly rtpTimeoutNs: bigint;
  private timedOut = false;

  // RTCP
  private readonly rtcpEveryTicks: number;
  private ticks = 0;
  private rtcpSent = 0;
  private rtcpReceived = 0;
  private lastSrMiddle = 0;
  private lastSrArrivalNs = 0n;
  private remoteReport: ReportBlock | undefined;
  private readonly cname: string;

  private constructor(
    private readonly rtp: Socket,
    private readonly rtcp: Socket,
    readonly localPort: number,
    options: MediaSessionOptions,
    vad: Vad | null,
  ) {
    super();
    this.vad = vad;
    this.segmenter = vad && options.listen ? new UtteranceSegmenter(vad, options.listen) : null;
    this.segmenter?.on('speechStart', (atMs) => this.emit('speechStart', atMs));
    this.segmenter?.on('utterance', (pcm, info) => this.emit('utterance', pcm, info));
    this.codec = options.codec;
    this.payloadType = PAYLOAD_TYPE[options.codec];
    this.dtmfPayloadType = options.dtmfPayloadType ?? DEFAULT_DTMF_PAYLOAD_TYPE;
    this.remote = options.remote;
    this.symmetric = options.symmetric ?? false;
    this.digitMs = options.digitMs ?? 100;
    this.inband = options.inbandDtmf ? new InbandDtmfDetector() : undefined;
    if (options.record) this.recording = new Int16Array(Math.max(0, Math.round(options.record.maxSeconds * SAMPLE_RATE)));
    this.lastReceiveNs = this.startNs;
    this.rtpTimeoutNs = BigInt(Math.round((options.rtpTimeoutMs ?? 0) * 1e6));
    this.rtcpEveryTicks = Math.max(1, Math.round((options.rtcpIntervalMs ?? 5000) / 20));
    this.continuous = options.continuous ?? false;
    this.profiler = options.speechProfile ? new SpeechProfiler(options.speechProfile.windowMs) : null;
    this.cname = options.cname ?? `ferry-${this.ssrc.toString(16)}@${options.host ?? '127.0.0.1'}`;
    const slab = Buffer.alloc((RTP_HEADER_LENGTH + FRAME_SAMPLES) * SEND_RING + (RTP_HEADER_LENGTH + 4) * SEND_RING);
    this.sendRing = [];
    this.eventRing = [];
    for (let i = 0; i < SEND_RING; i++) this.sendRing.push(slab.subarray(i * 172, i * 172 + 172));
    for (let i = 0, base = 172 * SEND_RING; i < SEND_RING; i++) this.eventRing.push(slab.subarray(base + i * 16, base + i * 16 + 16));
    rtp.on('message', this.onRtp);
    rtcp.on('message', this.onRtcp);
    const onError = (err: Error): void => {
      if (this.listenerCount('error') > 0) this.emit('error', err);
    };
    rtp.on('error', onError);
    rtcp.on('error', onError);
  }

  /** Binds RTP on `port` and RTCP on port + 1; rejects (both closed) when either is taken. */
  static async open(port: number, options: MediaSessionOptions): Promise<MediaSession> {
    const host = options.host ?? '127.0.0.1';
    const type = host.includes(':') ? 'udp6' : 'udp4';
    // The VAD first: the first one on this thread waits (asynchronously) for its WASM module.
    const vad = options.listen ? await Vad.create({ mode: options.listen.vadMode ?? 2 }) : null;
    const rtp = createSocket(type);
    const rtcp = createSocket(type);
    try {
      await bind(rtp, port, host);
      await bind(rtcp, port + 1, host);
    } catch (err) {
      rtp.close();
      rtcp.close();
      vad?.close();
      throw err;
    }
    return new MediaSession(rtp, rtcp, port, options, vad);
  }

  /**
   * Where to send (from the SDP answer), and what the answer chose when it differs from the offer's first codec. A
   * latched symmetric source is kept over the address.
   */
  setRemote(remote: RemoteAddress, negotiated: Negotiated = {}): void {
    if (!this.latched) this.remote = remote;
    if (negotiated.codec) {
      // Bridged audio waiting in the old law would play as noise in the new one.
      if (negotiated.codec !== this.codec) this.relay?.clear();
      this.codec = negotiated.codec;
      this.payloadType = PAYLOAD_TYPE[negotiated.codec];
    }
    if (negotiated.dtmfPayloadType !== undefined) this.dtmfPayloadType = negotiated.dtmfPayloadType;
  }

  get remoteAddress(): RemoteAddress | undefined {
    return this.remote;
  }

  /** Queues audio (8 kHz, any length); it goes out in 20 ms frames, the last one padded with silence. */
  play(pcm: Int16Array): void {
    if (pcm.length === 0) return;
    this.queue.push(pcm);
    this.playing = true;
  }

  /**
   * Barge-in: drops the queued audio at once (the next tick sends none, or silence when continuous) and emits
   * `playbackDone` with 'interrupted', so whoever waits for the playback goes on. Queued digits still go out.
   * Nothing happens when nothing is queued.
   */
  interrupt(): void {
    if (!this.playing) return;
    this.queue.length = 0;
    this.queueOffset = 0;
    this.playing = false;
    this.emit('playbackDone', 'interrupted');
  }

  /**
   * Pauses (false) or resumes (true) utterance segmentation (ListenOptions). Pausing drops an utterance in progress
   * without an event; offsets keep counting the time paused. No effect on a session opened without `listen`.
   */
  setListening(on: boolean): void {
    if (!this.segmenter || on === this.listening) return;
    this.listening = on;
    if (!on) this.segmenter.reset();
  }

  /** Queues keys as RFC 4733 events, sent one after another instead of audio. */
  sendDigits(digits: string): void {
    for (const digit of digits) {
      if (dtmfEventCode(digit) < 0) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
      this.digitQueue.push(digit);
    }
  }

  /**
   * Bridges this session to `peer` (the worker calls it on both sessions): the audio received here goes out from the
   * peer, in the peer's codec (copied when the codecs match, transcoded otherwise), and keys received as RFC 4733
   * events are sent on by the peer as its own events (its payload type, its digitMs). While bridged, each tick sends
   * a frame (the peer's audio, or silence while none has arrived), on the same SSRC, sequence and timestamp clock as
   * before; audio played meanwhile is mixed over it. A playback in progress stops (`playbackDone` 'interrupted').
   * null ends the bridge: the session goes back to what it did before (playback, continuous silence or nothing).
   */
  bridgeWith(peer: MediaSession | null): void {
    if (peer === this) throw new Error('a session cannot be bridged to itself');
    if (peer === this.bridgePeer) return;
    if (peer) {
      this.relay ??= new RelayBuffer();
      this.interrupt();
    }
    this.relay?.clear();
    this.bridgePeer = peer;
  }

  /** The session this one is bridged to, if any. */
  get bridgedWith(): MediaSession | null {
    return this.bridgePeer;
  }

  /** The peer's received audio (`count` octets of `codec` in `bytes` from `offset`), queued to send in our codec. */
  private relayAudio(codec: G711Codec, bytes: Uint8Array, offset: number, count: number): void {
    if (this.bridgePeer === null || this.closed) return;
    this.relay!.write(bytes, offset, count, transcodingTable(codec, this.codec));
  }

  /** A key the peer received as an RFC 4733 event, sent on as ours. */
  private relayDigit(digit: string): void {
    if (this.bridgePeer === null || this.closed) return;
    this.digitQueue.push(digit);
  }

  /** Samples still queued for playback. */
  get queuedSamples(): number {
    let total = -this.queueOffset;
    for (const chunk of this.queue) total += chunk.length;
    return total;
  }

  /**
   * One 20 ms slot, due at `dueNs`: sends the next DTMF event packet, else the next audio frame, else nothing.
   * The RTP clock advances by a frame every slot, sent or not, so a pause shows as a timestamp gap.
   */
  tick(dueNs: bigint): void {
    if (this.closed) return;
    this.ticks++;
    if (this.profileStartNs !== null && !this.profiler!.finished && dueNs - this.profileStartNs >= BigInt(this.profiler!.windowMs) * 1_000_000n) {
      this.emit('speechProfile', this.profiler!.finish());
    }
    if (this.segmenter && this.heardAudio) this.listenTick(this.segmenter);
    const remote = this.remote;
    if (remote) {
      if (this.event || this.digitQueue.length > 0) this.sendEventPacket(remote, dueNs);
      else if (this.bridgePeer) this.sendBridgedFrame(remote, dueNs);
      else if (this.playing) this.sendAudioFrame(remote, dueNs);
      else if (this.continuous) this.sendAudioFrame(remote, dueNs);
      else this.sentAudioLastTick = false;
      if (this.ticks % this.rtcpEveryTicks === 0) this.sendReport(remote);
    } else if (this.bridgePeer) this.relay!.skipFrame();
    this.timestamp = addTimestamp(this.timestamp, FRAME_SAMPLES);
  }

  /** The segmenter's clock while paused, and silent frames for a far end that stopped sending (DTX_GAP_TICKS). */
  private listenTick(segmenter: UtteranceSegmenter): void {
    if (!this.listening) segmenter.skip();
    else if (++this.ticksSinceAudio > DTX_GAP_TICKS) segmenter.pushSilence(SILENT_FRAME);
  }

  /** Emits `rtpTimeout` once when nothing came in for the configured time (again after packets resume). */
  checkTimeout(nowNs: bigint): void {
    if (this.rtpTimeoutNs === 0n || this.timedOut || this.closed) return;
    if (nowNs - this.lastReceiveNs >= this.rtpTimeoutNs) {
      this.timedOut = true;
      this.emit('rtpTimeout');
    }
  }

  private sendAudioFrame(remote: RemoteAddress, dueNs: bigint): void {
    this.takeFrame();
    const packet = this.sendRing[this.ringNext];
    this.ringNext = (this.ringNext + 1) % SEND_RING;
    writeRtpHeader(packet, 0, !this.sentAudioLastTick, this.payloadType, this.sequence, this.timestamp, this.ssrc);
    encodeG711(this.codec, this.frame, packet, RTP_HEADER_LENGTH);
    this.send(packet, remote, dueNs);
    this.bytesSent += FRAME_SAMPLES;
    this.sentAudioLastTick = true;
    this.endPlaybackIfDrained();
  }

  /** A bridged slot: the peer's next frame, or silence when none has arrived (the stream never pauses), with any queued playback mixed in. */
  private sendBridgedFrame(remote: RemoteAddress, dueNs: bigint): void {
    const packet = this.sendRing[this.ringNext];
    this.ringNext = (this.ringNext + 1) % SEND_RING;
    if (!this.relay!.read(packet, RTP_HEADER_LENGTH)) packet.fill(silenceOctet(this.codec), RTP_HEADER_LENGTH, RTP_HEADER_LENGTH + FRAME_SAMPLES);
    if (this.playing) this.mixPlayback(packet);
    writeRtpHeader(packet, 0, !this.sentAudioLastTick, this.payloadType, this.sequence, this.timestamp, this.ssrc);
    this.send(packet, remote, dueNs);
    this.bytesSent += FRAME_SAMPLES;
    this.sentAudioLastTick = true;
    this.endPlaybackIfDrained();
  }

  /** Adds the next frame of the queue to the G.711 frame in `packet` (through linear, clipped). */
  private mixPlayback(packet: Buffer): void {
    const mixed = (this.mixScratch ??= new Int16Array(FRAME_SAMPLES));
    decodeG711(this.codec, packet, mixed, RTP_HEADER_LENGTH, FRAME_SAMPLES);
    this.takeFrame();
    for (let i = 0; i < FRAME_SAMPLES; i++) {
      const sum = mixed[i] + this.frame[i];
      mixed[i] = sum > 32767 ? 32767 : sum < -32768 ? -32768 : sum;
    }
    encodeG711(this.codec, mixed, packet, RTP_HEADER_LENGTH);
  }

  private endPlaybackIfDrained(): void {
    if (this.playing && this.queue.length === 0) {
      this.playing = false;
      this.emit('playbackDone', 'finished');
    }
  }

  private sendEventPacket(remote: RemoteAddress, dueNs: bigint): void {
    if (!this.event) {
      const digit = this.digitQueue.shift()!;
      this.event = { packets: telephoneEventPackets(digit, { durationMs: this.digitMs }), next: 0, timestamp: this.timestamp };
      this.digitsSent++;
    }
    const event = this.event;
    const fields = event.packets[event.next++];
    const packet = this.eventRing[this.ringNext];
    this.ringNext = (this.ringNext + 1) % SEND_RING;
    writeRtpHeader(packet, 0, fields.marker, this.dtmfPayloadType, this.sequence, event.timestamp, this.ssrc);
    writeTelephoneEvent(packet, RTP_HEADER_LENGTH, fields);
    this.send(packet, remote, dueNs);
    this.bytesSent += 4;
    // The slot carried the event: the bridged audio of it is dropped, not delayed.
    if (this.bridgePeer) this.relay!.skipFrame();
    if (event.next === event.packets.length) this.event = undefined;
    // Audio after the event starts a new talkspurt.
    this.sentAudioLastTick = false;
  }

  private send(packet: Buffer, remote: RemoteAddress, dueNs: bigint): void {
    this.pacing.record(Number(process.hrtime.bigint() - dueNs) / 1000);
    this.rtp.send(packet, remote.port, remote.host);
    this.sequence = (this.sequence + 1) & 0xffff;
    this.packetsSent++;
  }

  /** The next 160 samples of the queue into this.frame, zero-padded at the end of the queue. */
  private takeFrame(): void {
    let filled = 0;
    while (filled < FRAME_SAMPLES && this.queue.length > 0) {
      const chunk = this.queue[0];
      const take = Math.min(FRAME_SAMPLES - filled, chunk.length - this.queueOffset);
      this.frame.set(chunk.subarray(this.queueOffset, this.queueOffset + take), filled);
      filled += take;
      this.queueOffset += take;
      if (this.queueOffset === chunk.length) {
        this.queue.shift();
        this.queueOffset = 0;
      }
    }
    if (filled < FRAME_SAMPLES) this.frame.fill(0, filled);
  }

  private sendReport(remote: RemoteAddress): void {
    const blocks: ReportBlock[] = [];
    if (this.remoteSsrc !== undefined) {
      const dlsr = this.lastSrArrivalNs ? Number(((process.hrtime.bigint() - this.lastSrArrivalNs) * 65536n) / 1_000_000_000n) : 0;
      blocks.push(this.receiveStats.reportBlock(this.remoteSsrc, this.lastSrMiddle, dlsr));
    }
    const sender =
      this.packetsSent > 0
        ? { ...ntpTime(Date.now()), rtpTimestamp: this.timestamp, packetCount: this.packetsSent, octetCount: this.bytesSent }
        : undefined;
    this.rtcp.send(buildRtcpReport({ ssrc: this.ssrc, sender, blocks, cname: this.cname }), remote.port + 1, remote.host);
    this.rtcpSent++;
  }

  private readonly onRtp = (message: Buffer, from: RemoteInfo): void => {
    const packet = decodeRtp(message, this.received);
    if (!packet) {
      this.malformed++;
      return;
    }
    const now = process.hrtime.bigint();
    if (this.symmetric && !this.latched) {
      this.latched = true;
      this.remote = { host: from.address, port: from.port };
    }
    this.remoteSsrc ??= packet.ssrc;
    this.packetsReceived++;
    this.bytesReceived += packet.payloadLength;
    this.lastReceiveNs = now;
    this.timedOut = false;
    const arrival = Number(now - this.startNs) / NS_PER_TIMESTAMP_UNIT;
    const isEvent = packet.payloadType === this.dtmfPayloadType;
    // Event packets repeat their event's timestamp: they count for sequence and loss, not for jitter.
    this.receiveStats.update(packet.sequence, packet.timestamp, arrival, !isEvent);
    if (isEvent) {
      const digit = this.dtmfReceiver.push(packet.timestamp, message, packet.payloadOffset, packet.payloadLength);
      if (digit) {
        this.reportDigit(digit, 'rfc4733');
        this.bridgePeer?.relayDigit(digit);
      }
      return;
    }
    const codec = codecOfPayloadType(packet.payloadType);
    if (!codec) return;
    this.bridgePeer?.relayAudio(codec, message, packet.payloadOffset, packet.payloadLength);
    const samples = decodeG711(codec, message, this.decoded, packet.payloadOffset, packet.payloadLength);
    if (this.recording && !this.recordingFull) this.record(packet.timestamp, samples);
    if (this.profiler && !this.profiler.finished) {
      this.profileStartNs ??= now;
      const runs = this.profiler.push(packet.timestamp, this.decoded, samples);
      if (runs) this.emit('speechProfile', runs);
    }
    if (this.segmenter) {
      this.heardAudio = true;
      this.ticksSinceAudio = 0;
      if (this.listening) this.segmenter.write(this.decoded, samples);
    }
    if (this.inband) {
      const digits = this.inband.push(this.decoded, 0, samples);
      for (const digit of digits) this.reportDigit(digit, 'inband');
    }
  };

  /** Places the frame by its timestamp (a lost packet leaves silence, a reordered one lands in its place). */
  private record(timestamp: number, samples: number): void {
    const recording = this.recording!;
    this.recordingFirstTimestamp ??= timestamp;
    const at = timestampDelta(this.recordingFirstTimestamp, timestamp);
    if (at < 0) return;
    if (at >= recording.length) {
      this.recordingFull = true;
      return;
    }
    const n = Math.min(samples, recording.length - at);
    recording.set(this.decoded.subarray(0, n), at);
    if (at + n > this.recordingLength) this.recordingLength = at + n;
    if (at + n === recording.length) this.recordingFull = true;
  }

  private reportDigit(digit: string, source: DigitSource): void {
    this.digitsReceived++;
    this.emit('digit', digit, source);
  }

  private readonly onRtcp = (message: Buffer): void => {
    const compound = parseRtcp(message);
    if (!compound) {
      this.malformed++;
      return;
    }
    this.rtcpReceived++;
    // A far end that suppresses silence still sends its reports: it is alive.
    this.lastReceiveNs = process.hrtime.bigint();
    this.timedOut = false;
    for (const report of compound.reports) {
      if (report.sender && (this.remoteSsrc === undefined || report.ssrc === this.remoteSsrc)) {
        this.lastSrMiddle = ntpMiddle(report.sender.ntpSeconds, report.sender.ntpFraction);
        this.lastSrArrivalNs = process.hrtime.bigint();
      }
      const aboutUs = report.blocks.find((b) => b.ssrc === this.ssrc);
      if (aboutUs) this.remoteReport = aboutUs;
    }
    this.emit('rtcp', compound);
  };

  stats(): MediaSessionStats {
    return {
      localPort: this.localPort,
      packetsSent: this.packetsSent,
      bytesSent: this.bytesSent,
      packetsReceived: this.packetsReceived,
      bytesReceived: this.bytesReceived,
      lost: this.receiveStats.lost,
      outOfOrder: this.receiveStats.outOfOrder,
      malformed: this.malformed,
      jitterMs: this.receiveStats.jitter / (SAMPLE_RATE / 1000),
      digitsSent: this.digitsSent,
      digitsReceived: this.digitsReceived,
      rtcpSent: this.rtcpSent,
      rtcpReceived: this.rtcpReceived,
      pacing: this.pacing.summary(),
      remoteReport: this.remoteReport,
    };
  }

  /** The recorded audio so far (a copy of exactly the recorded length), or undefined when not recording. */
  recorded(): Int16Array | undefined {
    return this.recording?.slice(0, this.recordingLength);
  }

  /** Closes both sockets; the final stats. Idempotent. */
  async close(): Promise<MediaSessionStats> {
    if (!this.closed) {
      this.closed = true;
      // A bridge outlives neither session: the peer goes on alone.
      const peer = this.bridgePeer;
      this.bridgeWith(null);
      if (peer?.bridgePeer === this) peer.bridgeWith(null);
      await Promise.all([closeSocket(this.rtp), closeSocket(this.rtcp)]);
      // An utterance in progress is dropped: the call is over.
      this.segmenter?.removeAllListeners();
      this.vad?.close();
    }
    return this.stats();
  }
}

function bind(socket: Socket, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    socket.once('error', onError);
    socket.bind({ port, address: host, exclusive: true }, () => {
      socket.off('error', onError);
      resolve();
    });
  });
}

function closeSocket(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve(); // already closed
    }
  });
}
