/**
 * Per-user token buckets for what sockets send (messages, typing, read marks; reads apart). They stand in for the
 * per-request limits of the REST API. Kept in this process: a user whose sockets are spread over several instances
 * gets the rate on each (stated in docs/chat.md); a shared Redis bucket would cost a round trip per event.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(
    private readonly o: {
      /** Tokens added per second. */
      ratePerSecond: number;
      /** The most a bucket holds (the burst). */
      burst: number;
      clock?: () => number;
    },
  ) {
    this.perMs = o.ratePerSecond / 1000;
  }

  private now(): number {
    return (this.o.clock ?? Date.now)();
  }

  /** Takes one token for `key`: 0 when taken, else the milliseconds until one is there. */
  take(key: string): number {
    const now = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: this.o.burst, at: now };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.o.burst, b.tokens + (now - b.at) * this.perMs);
      b.at = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - b.tokens) / this.perMs);
  }

  /** Forgets the buckets that refilled (they would start full anyway), so memory follows the active users. */
  sweep(): void {
    const now = this.now();
    for (const [key, b] of this.buckets) if (b.tokens + (now - b.at) * this.perMs >= this.o.burst) this.buckets.delete(key);
  }

  get size(): number {
    return this.buckets.size;
  }
}

/** How much larger than chat.maxMessageBytes one socket packet may be: the event name, ids and JSON framing around it. */
const PACKET_OVERHEAD_BYTES = 2048;

/**
 * The largest packet a socket may send (Socket.IO's maxHttpBufferSize): room for a message at the size limit written
 * as JSON with escapes, so the service's CHAT_MESSAGE_TOO_LARGE answers a large message rather than a cut connection.
 */
export function maxPacketBytes(maxMessageBytes: number): number {
  return maxMessageBytes * 2 + PACKET_OVERHEAD_BYTES;
}
