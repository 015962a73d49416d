/**
 * Relays G.711 between a WebRTC leg and a trunk's plain RTP address without transcoding: payloads are copied as
 * they are, payload types mapped between the two negotiations, and each direction rewritten onto a stream of its
 * own (one SSRC, continuous sequence and timestamps) so neither side sees the other's source changes.
 */
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { PAYLOAD_TYPE, type G711Codec } from '../rtp/g711.js';
import { decodeRtp, emptyRtpPacket, rtpPayload, RTP_HEADER_LENGTH, writeRtpHeader } from '../rtp/rtp-packet.js';
import { RtpStreamRewriter } from './stream-rewriter.js';
import type { WebRtcLeg, WebRtcLegEvents, WebRtcRtp } from './webrtc-leg.js';

export interface RtpAddress {
  address: string;
  port: number;
}

export interface RtpBridgeOptions {
  /** Where the trunk wants its RTP (its SDP's connection address and audio port). */
  remote: RtpAddress;
  /**
   * A bound UDP socket for the trunk side (from Ferry's port pool); the caller keeps owning it. Without one the
   * bridge binds its own on `host`:`port` (default 127.0.0.1, any port) and closes it at close().
   */
  socket?: Socket;
  host?: string;
  port?: number;
  /** The codec the trunk leg negotiated: it must be the WebRTC leg's, as nothing is transcoded. */
  codec?: G711Codec;
  /** The trunk's payload type for the codec (default: the codec's static type). */
  payloadType?: number;
  /** The trunk's telephone-event type; without it key presses are not relayed (and counted as dropped). */
  dtmfPayloadType?: number;
  /** Take the trunk's packets from any address, not only `remote.address` (default false). */
  acceptAnySource?: boolean;
}

export interface RtpBridgeStats {
  toTrunk: number;
  toLeg: number;
  /** From the WebRTC leg: payload types the trunk did not negotiate (comfort noise, unmapped events). */
  droppedFromLeg: number;
  /** From the trunk: not RTP, from a stranger, or an unnegotiated payload type; or the leg could not send. */
  droppedFromTrunk: number;
}

export class RtpBridge {
  private readonly toTrunkStream = new RtpStreamRewriter();
  private readonly toLegStream = new RtpStreamRewriter();
  private readonly received = emptyRtpPacket();
  private readonly counts: RtpBridgeStats = { toTrunk: 0, toLeg: 0, droppedFromLeg: 0, droppedFromTrunk: 0 };
  /** Payload type on the leg → on the trunk, and back. */
  private readonly legToTrunk = new Map<number, number>();
  private readonly trunkToLeg = new Map<number, number>();
  private remote: RtpAddress;
  private closing: Promise<void> | undefined;
  private readonly onLegRtp = (packet: WebRtcRtp): void => this.fromLeg(packet);
  private readonly onLegState = (state: WebRtcLegEvents['state'][0]): void => {
    if (state === 'closed') void this.close();
  };
  private readonly onTrunkMessage = (message: Buffer, from: RemoteInfo): void => this.fromTrunk(message, from);

  private constructor(
    private readonly leg: WebRtcLeg,
    private readonly socket: Socket,
    private readonly ownsSocket: boolean,
    private readonly options: RtpBridgeOptions,
  ) {
    this.remote = { ...options.remote };
    const trunkPayloadType = options.payloadType ?? PAYLOAD_TYPE[leg.codec];
    this.legToTrunk.set(leg.payloadType, trunkPayloadType);
    this.trunkToLeg.set(trunkPayloadType, leg.payloadType);
    if (leg.dtmfPayloadType !== undefined && options.dtmfPayloadType !== undefined) {
      this.legToTrunk.set(leg.dtmfPayloadType, options.dtmfPayloadType);
      this.trunkToLeg.set(options.dtmfPayloadType, leg.dtmfPayloadType);
    }
    leg.on('rtp', this.onLegRtp);
    leg.on('state', this.onLegState);
    socket.on('message', this.onTrunkMessage);
  }

  /** Starts relaying between a negotiated leg and the trunk's RTP address. */
  static async open(leg: WebRtcLeg, options: RtpBridgeOptions): Promise<RtpBridge> {
    if (options.codec !== undefined && options.codec !== leg.codec) {
      throw new RangeError(`the trunk leg uses ${options.codec} and the WebRTC leg ${leg.codec}: the bridge does not transcode`);
    }
    if (leg.state === 'closed') throw new Error('the WebRTC leg is closed');
    if (options.socket) return new RtpBridge(leg, options.socket, false, options);
    const host = options.host ?? '127.0.0.1';
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(options.port ?? 0, host, () => {
        socket.off('error', reject);
        resolve();
      });
    }).catch((error: unknown) => {
      socket.close();
      throw error;
    });
    // Send failures (an unreachable trunk) must not take the process down; the trunk's silence shows in the stats.
    socket.on('error', () => undefined);
    return new RtpBridge(leg, socket, true, options);
  }

  /** The trunk-side address to announce in the trunk leg's SDP. */
  get local(): RtpAddress {
    const { address, port } = this.socket.address();
    return { address, port };
  }

  get stats(): RtpBridgeStats {
    return { ...this.counts };
  }

  /** The trunk moved its media (a re-INVITE). */
  setRemote(remote: RtpAddress): void {
    this.remote = { ...remote };
  }

  /** Stops relaying in both directions; closes the socket only when the bridge bound it. The leg stays open. */
  close(): Promise<void> {
    this.closing ??= this.stop();
    return this.closing;
  }

  private async stop(): Promise<void> {
    this.leg.off('rtp', this.onLegRtp);
    this.leg.off('state', this.onLegState);
    this.socket.off('message', this.onTrunkMessage);
    if (this.ownsSocket) await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }

  private fromLeg(packet: WebRtcRtp): void {
    if (this.closing) return;
    const payloadType = this.legToTrunk.get(packet.payloadType);
    if (payloadType === undefined) {
      this.counts.droppedFromLeg++;
      return;
    }
    const { sequence, timestamp, sourceChanged } = this.toTrunkStream.rewrite(packet.ssrc, packet.sequence, packet.timestamp);
    // One buffer per packet: dgram keeps a reference until the datagram is sent.
    const datagram = Buffer.allocUnsafe(RTP_HEADER_LENGTH + packet.payload.length);
    writeRtpHeader(datagram, 0, packet.marker || sourceChanged, payloadType, sequence, timestamp, this.toTrunkStream.ssrc);
    packet.payload.copy(datagram, RTP_HEADER_LENGTH);
    this.socket.send(datagram, this.remote.port, this.remote.address);
    this.counts.toTrunk++;
  }

  private fromTrunk(message: Buffer, from: RemoteInfo): void {
    if (this.closing) return;
    const packet = decodeRtp(message, this.received);
    const payloadType = packet ? this.trunkToLeg.get(packet.payloadType) : undefined;
    if (!packet || payloadType === undefined || (!this.options.acceptAnySource && from.address !== this.remote.address)) {
      this.counts.droppedFromTrunk++;
      return;
    }
    const { timestamp, sourceChanged } = this.toLegStream.rewrite(packet.ssrc, packet.sequence, packet.timestamp);
    // A view, no copy: dgram hands each datagram a buffer of its own.
    const sent = this.leg.sendRtp(rtpPayload(packet), { timestamp, marker: packet.marker || sourceChanged, payloadType });
    if (sent) this.counts.toLeg++;
    else this.counts.droppedFromTrunk++;
  }
}
