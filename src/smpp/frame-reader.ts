import { HEADER_LENGTH, readCommandLength } from './codec.js';

/** Receives each complete PDU as (buffer, offset); returning false stops the reader (the session closed). */
export type FrameSink = (buf: Buffer, offset: number, length: number) => boolean;

/**
 * Cuts a TCP byte stream into PDU frames. Frames wholly inside a chunk are handed over in place (no copy);
 * only a frame straddling chunks is assembled, into a buffer sized from its command_length.
 */
export class FrameReader {
  private partial: Buffer | undefined; // the straddling frame being assembled
  private partialFilled = 0;
  private readonly lengthBytes = Buffer.alloc(4); // a command_length split across chunks
  private lengthFilled = 0;

  constructor(private readonly sink: FrameSink, private readonly maxLength: number) {}

  /** Feeds a chunk; throws SmppDecodeError on an impossible command_length. */
  push(chunk: Buffer): void {
    let pos = 0;
    const end = chunk.length;

    if (this.lengthFilled > 0) {
      while (this.lengthFilled < 4 && pos < end) this.lengthBytes[this.lengthFilled++] = chunk[pos++];
      if (this.lengthFilled < 4) return;
      this.lengthFilled = 0;
      this.startPartial(readCommandLength(this.lengthBytes, 0, this.maxLength));
      this.lengthBytes.copy(this.partial!, 0);
      this.partialFilled = 4;
    }

    if (this.partial) {
      const want = this.partial.length - this.partialFilled;
      const take = Math.min(want, end - pos);
      chunk.copy(this.partial, this.partialFilled, pos, pos + take);
      this.partialFilled += take;
      pos += take;
      if (this.partialFilled < this.partial.length) return;
      const frame = this.partial;
      this.partial = undefined;
      if (!this.sink(frame, 0, frame.length)) return;
    }

    while (pos < end) {
      const left = end - pos;
      if (left < 4) {
        chunk.copy(this.lengthBytes, 0, pos, end);
        this.lengthFilled = left;
        return;
      }
      const length = readCommandLength(chunk, pos, this.maxLength);
      if (length > left) {
        this.startPartial(length);
        chunk.copy(this.partial!, 0, pos, end);
        this.partialFilled = left;
        return;
      }
      if (!this.sink(chunk, pos, length)) return;
      pos += length;
    }
  }

  /** Octets held for an incomplete frame (bounded by maxLength). */
  get buffered(): number {
    return this.partial ? this.partialFilled : this.lengthFilled;
  }

  private startPartial(length: number): void {
    this.partial = Buffer.allocUnsafe(Math.max(length, HEADER_LENGTH));
    this.partialFilled = 0;
  }
}
