/**
 * The audio a bridged session hands its peer: G.711 octets already in the peer's codec, written as packets arrive
 * and read by the peer's sender one 20 ms frame per tick. The far end's packets and our clock are not in step
 * (jitter, another ptime, clock drift), so this is a small jitter buffer: a late packet leaves one slot to silence
 * and one frame of cushion behind it; a backlog past MAX_BUFFERED (a burst, a faster clock) is cut back to TRIM_TO
 * by dropping the oldest audio, so the delay stays bounded. One preallocated ring: nothing is allocated per packet.
 */
import { FRAME_SAMPLES } from './g711.js';

const CAPACITY = FRAME_SAMPLES * 16;
/** 160 ms of backlog at most… */
const MAX_BUFFERED = FRAME_SAMPLES * 8;
/** …then cut back to the newest 40 ms. */
const TRIM_TO = FRAME_SAMPLES * 2;

export class RelayBuffer {
  private readonly ring = new Uint8Array(CAPACITY);
  private start = 0;
  private length = 0;
  /** Octets dropped to keep the delay bounded (a statistic). */
  dropped = 0;

  /** Octets waiting. */
  get buffered(): number {
    return this.length;
  }

  /** Appends `count` octets of `bytes` from `offset`, each mapped through `table` (transcoding) when one is given. */
  write(bytes: Uint8Array, offset: number, count: number, table: Uint8Array | null): void {
    if (count <= 0) return;
    if (count > CAPACITY) {
      offset += count - CAPACITY;
      count = CAPACITY;
    }
    if (this.length + count > CAPACITY) this.drop(this.length + count - CAPACITY);
    let at = (this.start + this.length) % CAPACITY;
    for (let i = 0; i < count; i++) {
      const octet = bytes[offset + i];
      this.ring[at] = table === null ? octet : table[octet];
      if (++at === CAPACITY) at = 0;
    }
    this.length += count;
    if (this.length > MAX_BUFFERED) this.drop(this.length - TRIM_TO);
  }

  /** Moves one frame (160 octets) into `out` at `offset`; false (nothing moved) when less than a frame is waiting. */
  read(out: Uint8Array, offset: number): boolean {
    if (this.length < FRAME_SAMPLES) return false;
    for (let i = 0; i < FRAME_SAMPLES; i++) {
      out[offset + i] = this.ring[this.start];
      if (++this.start === CAPACITY) this.start = 0;
    }
    this.length -= FRAME_SAMPLES;
    return true;
  }

  /** Discards up to one frame (a slot that carried something else, e.g. a DTMF event), so audio does not back up. */
  skipFrame(): void {
    this.drop(Math.min(FRAME_SAMPLES, this.length), false);
  }

  clear(): void {
    this.start = 0;
    this.length = 0;
  }

  private drop(count: number, counted = true): void {
    this.start = (this.start + count) % CAPACITY;
    this.length -= count;
    if (counted) this.dropped += count;
  }
}
