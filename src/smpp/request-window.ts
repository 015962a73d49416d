import type { Pdu, PduInput } from './pdu.js';

export interface Outstanding {
  command: string;
  resolve: (pdu: Pdu) => void;
  reject: (err: Error) => void;
  deadline: number;
  timeoutMs: number;
  /** Counts against the window (control PDUs such as enquire_link do not). */
  counted: boolean;
}

export interface Waiting {
  pdu: PduInput;
  resolve: (pdu: Pdu) => void;
  reject: (err: Error) => void;
  deadline: number;
  timeoutMs: number;
}

const MAX_SEQUENCE = 0x7fffffff;

/**
 * Requests in flight (keyed by sequence number, at most `size` counted ones) and a bounded FIFO of requests
 * waiting for a slot. Timeouts are swept by the session's ticker rather than a timer per request.
 */
export class RequestWindow {
  private readonly inflight = new Map<number, Outstanding>();
  private waiting: Waiting[] = [];
  private head = 0;
  private counted = 0;
  private seq = 0;

  constructor(readonly size: number, readonly maxQueue: number) {}

  get inUse(): number {
    return this.counted;
  }

  get queued(): number {
    return this.waiting.length - this.head;
  }

  get hasRoom(): boolean {
    return this.counted < this.size;
  }

  /** Next sequence number in 1..0x7FFFFFFF, skipping any still in flight after a wrap. */
  nextSequence(): number {
    do {
      this.seq = this.seq >= MAX_SEQUENCE ? 1 : this.seq + 1;
    } while (this.inflight.has(this.seq));
    return this.seq;
  }

  add(seq: number, entry: Outstanding): void {
    this.inflight.set(seq, entry);
    if (entry.counted) this.counted++;
  }

  /** Removes and returns the request answered by `seq`, if it is still outstanding. */
  take(seq: number): Outstanding | undefined {
    const entry = this.inflight.get(seq);
    if (entry) {
      this.inflight.delete(seq);
      if (entry.counted) this.counted--;
    }
    return entry;
  }

  enqueue(w: Waiting): boolean {
    if (this.queued >= this.maxQueue) return false;
    this.waiting.push(w);
    return true;
  }

  dequeue(): Waiting | undefined {
    if (this.head >= this.waiting.length) return undefined;
    const w = this.waiting[this.head++];
    // Compact occasionally so the array does not keep consumed slots forever.
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    return w;
  }

  /** Collects requests (in flight and waiting) whose deadline has passed, removing them. */
  expire(now: number, onInflight: (seq: number, e: Outstanding) => void, onWaiting: (w: Waiting) => void): void {
    for (const [seq, e] of this.inflight) {
      if (e.deadline <= now) {
        this.take(seq);
        onInflight(seq, e);
      }
    }
    if (this.queued > 0) {
      const keep: Waiting[] = [];
      for (let i = this.head; i < this.waiting.length; i++) {
        const w = this.waiting[i];
        if (w.deadline <= now) onWaiting(w);
        else keep.push(w);
      }
      this.waiting = keep;
      this.head = 0;
    }
  }

  /** Rejects everything in flight and waiting with `err`. */
  failAll(err: Error): void {
    const inflight = [...this.inflight.values()];
    this.inflight.clear();
    this.counted = 0;
    const waiting = this.waiting.slice(this.head);
    this.waiting = [];
    this.head = 0;
    for (const e of inflight) e.reject(err);
    for (const w of waiting) w.reject(err);
  }

  /** Rejects only the waiting (unsent) requests. */
  failWaiting(err: Error): void {
    const waiting = this.waiting.slice(this.head);
    this.waiting = [];
    this.head = 0;
    for (const w of waiting) w.reject(err);
  }
}
