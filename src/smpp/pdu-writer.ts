import type { Socket } from 'node:net';
import { encodedLength, encodePduInto } from './codec.js';
import type { PduInput } from './pdu.js';

const SLAB_SIZE = 32 * 1024;
/** Unsent octets beyond which the session holds requests back, even before the socket reports back-pressure. */
const DEFAULT_HIGH_WATER = 256 * 1024;

/**
 * Encodes PDUs straight into a per-session slab and hands the socket one write per tick. The slab only moves
 * forward, so a flushed range is never overwritten while the socket still holds it; a full slab is replaced.
 */
export class PduWriter {
  private slab: Buffer | undefined;
  private start = 0; // first unflushed octet in the slab
  private pos = 0; // next free octet
  private readonly carried: Buffer[] = []; // unflushed ranges of earlier slabs
  private scheduled = false;
  private closed = false;
  bytesOut = 0;
  pdusOut = 0;

  constructor(
    private readonly socket: Socket,
    /** Called after each flush, so held-back requests can go out once the batch has left. */
    private readonly onFlushed: () => void = () => undefined,
    private readonly highWater = DEFAULT_HIGH_WATER,
  ) {}

  /** Encodes now (encode errors throw to the caller) and sends with the rest of this tick's PDUs. */
  write(pdu: PduInput, sequenceNumber?: number): void {
    if (this.closed) return;
    const length = encodedLength(pdu);
    if (!this.slab || this.pos + length > this.slab.length) this.newSlab(length);
    const slab = this.slab!;
    encodePduInto(pdu, slab, this.pos, length, sequenceNumber ?? pdu.sequence_number ?? 0);
    this.pos += length;
    this.pdusOut++;
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushBound);
    }
  }

  /**
   * True while the socket reports back-pressure (until 'drain') or this tick's batch is already large. Checking the
   * batch too matters: within one tick nothing has reached the socket yet, so its own flag would stay false.
   */
  get congested(): boolean {
    return this.socket.writableNeedDrain || this.pendingBytes >= this.highWater;
  }

  /** Octets encoded but not yet handed to the socket, plus what the socket still buffers. */
  get pendingBytes(): number {
    let n = this.pos - this.start;
    for (const c of this.carried) n += c.length;
    return n + this.socket.writableLength;
  }

  private readonly flushBound = (): void => this.flush();

  flush(): void {
    this.scheduled = false;
    if (this.closed || this.socket.destroyed) return;
    const current = this.slab && this.pos > this.start ? this.slab.subarray(this.start, this.pos) : undefined;
    this.start = this.pos;
    if (this.carried.length === 0) {
      if (current) this.send(current);
    } else {
      this.socket.cork();
      for (const c of this.carried) this.send(c);
      this.carried.length = 0;
      if (current) this.send(current);
      this.socket.uncork();
    }
    this.onFlushed();
  }

  /** Stops accepting PDUs; what is already encoded is flushed first. */
  close(): void {
    this.flush();
    this.closed = true;
    this.slab = undefined;
  }

  private send(chunk: Buffer): void {
    this.bytesOut += chunk.length;
    this.socket.write(chunk);
  }

  private newSlab(atLeast: number): void {
    if (this.slab && this.pos > this.start) this.carried.push(this.slab.subarray(this.start, this.pos));
    this.slab = Buffer.allocUnsafeSlow(Math.max(SLAB_SIZE, atLeast));
    this.start = 0;
    this.pos = 0;
  }
}
