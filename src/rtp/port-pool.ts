/** Hands out even RTP ports (RTCP takes port + 1) from a range; a port is never held twice at once. */

export interface PortRange {
  /** First port (rounded up to even). */
  min: number;
  /** Last port usable for RTCP (the last RTP port is the even one below it). */
  max: number;
}

export class PortPool {
  private readonly inUse = new Set<number>();
  private readonly first: number;
  private readonly count: number;
  /** Round-robin, so a just-released port rests while others are handed out (late packets of an old call). */
  private next = 0;

  constructor(range: PortRange) {
    this.first = range.min + (range.min & 1);
    if (range.min < 1 || range.max > 65535) throw new RangeError(`port range ${range.min}-${range.max} is outside 1-65535`);
    this.count = Math.max(0, Math.floor((range.max - this.first + 1) / 2));
    if (this.count === 0) throw new RangeError(`port range ${range.min}-${range.max} holds no RTP/RTCP pair`);
  }

  /** Pairs in the range. */
  get size(): number {
    return this.count;
  }

  get available(): number {
    return this.count - this.inUse.size;
  }

  /** An even free port, or undefined when all are taken. */
  acquire(): number | undefined {
    for (let tried = 0; tried < this.count; tried++) {
      const port = this.first + 2 * this.next;
      this.next = (this.next + 1) % this.count;
      if (!this.inUse.has(port)) {
        this.inUse.add(port);
        return port;
      }
    }
    return undefined;
  }

  release(port: number): void {
    this.inUse.delete(port);
  }

  /** Splits a range into `parts` disjoint ranges (one per worker), each with at least one pair. */
  static split(range: PortRange, parts: number): PortRange[] {
    const pool = new PortPool(range);
    const per = Math.floor(pool.size / parts);
    if (per < 1) throw new RangeError(`port range ${range.min}-${range.max} is too small for ${parts} workers`);
    const ranges: PortRange[] = [];
    for (let i = 0; i < parts; i++) {
      const min = pool.first + 2 * per * i;
      ranges.push({ min, max: i === parts - 1 ? range.max : min + 2 * per - 1 });
    }
    return ranges;
  }
}
