/** RFC 4733 telephone-events for the 16 DTMF keys: what a sender emits for a digit, and a receiver that reports each once. */
import { timestampDelta } from './rtp-packet.js';

export const DEFAULT_DTMF_PAYLOAD_TYPE = 101;
export const DTMF_DIGITS = '0123456789*#ABCD';
export const TELEPHONE_EVENT_LENGTH = 4;

/** Event code (0–15) of a DTMF key, or -1. */
export function dtmfEventCode(digit: string): number {
  return DTMF_DIGITS.indexOf(digit.toUpperCase());
}

/** The key of an event code 0–15, or undefined for other events (flash, tones). */
export function dtmfDigit(event: number): string | undefined {
  return event >= 0 && event < 16 ? DTMF_DIGITS[event] : undefined;
}

/** One telephone-event packet's fields; all packets of one event share its RTP timestamp (the event's start). */
export interface TelephoneEventPacket {
  event: number;
  end: boolean;
  volume: number;
  /** In timestamp units (8 kHz) since the event's start. */
  duration: number;
  /** Set on the first packet of the event only. */
  marker: boolean;
}

export interface DtmfToneOptions {
  /** How long the key is held, ms (default 100; rounded up to whole 20 ms packets). */
  durationMs?: number;
  /** Power level 0–63, as -dBm0 (default 10). */
  volume?: number;
  /** Packet interval, ms (default 20). */
  packetMs?: number;
}

/**
 * The packets a sender emits for one key, one per packet interval: durations growing by the interval, the marker
 * on the first, and the final duration sent three times with the E bit (RFC 4733 §2.5.1.4).
 */
export function telephoneEventPackets(digit: string, options: DtmfToneOptions = {}): TelephoneEventPacket[] {
  const event = dtmfEventCode(digit);
  if (event < 0) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
  const packetMs = options.packetMs ?? 20;
  const volume = options.volume ?? 10;
  const step = packetMs * 8;
  const steps = Math.max(1, Math.ceil((options.durationMs ?? 100) / packetMs));
  const packets: TelephoneEventPacket[] = [];
  for (let i = 1; i <= steps; i++) packets.push({ event, end: false, volume, duration: i * step, marker: i === 1 });
  const last = packets[packets.length - 1];
  // The last growing packet becomes the first of the three end packets.
  last.end = true;
  packets.push({ ...last, marker: false }, { ...last, marker: false });
  return packets;
}

/** Writes a telephone-event payload (4 octets) at `offset`. */
export function writeTelephoneEvent(out: Uint8Array, offset: number, packet: TelephoneEventPacket): number {
  out[offset] = packet.event;
  out[offset + 1] = (packet.end ? 0x80 : 0) | (packet.volume & 0x3f);
  out[offset + 2] = (packet.duration >> 8) & 0xff;
  out[offset + 3] = packet.duration & 0xff;
  return TELEPHONE_EVENT_LENGTH;
}

/** Reads a telephone-event payload; null when too short. */
export function readTelephoneEvent(bytes: Uint8Array, offset: number, length: number, marker = false): TelephoneEventPacket | null {
  if (length < TELEPHONE_EVENT_LENGTH) return null;
  return {
    event: bytes[offset],
    end: (bytes[offset + 1] & 0x80) !== 0,
    volume: bytes[offset + 1] & 0x3f,
    duration: (bytes[offset + 2] << 8) | bytes[offset + 3],
    marker,
  };
}

const REMEMBERED_EVENTS = 16;

/**
 * Turns incoming telephone-event packets into keys, each exactly once. An event is known by its RTP timestamp:
 * its repeats, its end packets, packets reordered within it, or a lost first packet all map to the same event.
 * A packet of an event older than the newest seen (a straggler) is ignored.
 */
export class DtmfReceiver {
  private readonly seen = new Array<number>(REMEMBERED_EVENTS).fill(-1);
  private seenNext = 0;
  private newest: number | undefined;

  /** Returns the key when this packet starts a new event, otherwise undefined. */
  push(timestamp: number, payload: Uint8Array, offset = 0, length = payload.length - offset): string | undefined {
    const packet = readTelephoneEvent(payload, offset, length);
    if (!packet) return undefined;
    const digit = dtmfDigit(packet.event);
    if (digit === undefined) return undefined;
    if (this.seen.includes(timestamp)) return undefined;
    if (this.newest !== undefined && timestampDelta(this.newest, timestamp) < 0) return undefined;
    this.newest = timestamp;
    this.seen[this.seenNext] = timestamp;
    this.seenNext = (this.seenNext + 1) % REMEMBERED_EVENTS;
    return digit;
  }
}
