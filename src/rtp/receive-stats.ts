/** What a receiver knows of one source (RFC 3550 A.1, A.3, A.8): extended sequence, loss, interarrival jitter. */
import type { ReportBlock } from './rtcp.js';
import { timestampDelta } from './rtp-packet.js';

const RTP_SEQ_MOD = 0x10000;
const MAX_DROPOUT = 3000;
const MAX_MISORDER = 100;

/**
 * Fed one packet at a time. Differs from A.1 in one way: the first packet is taken as the start of the stream
 * (no probation), since the source is the one signalling told us about.
 */
export class RtpReceiveStats {
  private started = false;
  private maxSeq = 0;
  private cycles = 0;
  private baseSeq = 0;
  private badSeq = RTP_SEQ_MOD + 1;
  /** Packets accepted (duplicates included, as in A.3). */
  received = 0;
  /** Packets that came in below the highest sequence seen. */
  outOfOrder = 0;
  private expectedPrior = 0;
  private receivedPrior = 0;
  private lastTransitTs = 0;
  private lastArrival = 0;
  private hasTransit = false;
  /** Interarrival jitter in timestamp units (A.8's J, kept unrounded). */
  jitter = 0;

  /**
   * One packet: its sequence, its RTP timestamp, and its arrival time in the same timestamp units (a float is fine).
   * `jitterSample` false: a packet whose timestamp says nothing of its send time (an RFC 4733 repeat).
   * Returns false when the sequence jumped so far it is held until confirmed (A.1's bad_seq).
   */
  update(sequence: number, timestamp: number, arrival: number, jitterSample = true): boolean {
    if (!this.started) {
      this.started = true;
      this.baseSeq = sequence;
      this.maxSeq = sequence;
      this.received = 1;
      this.lastTransitTs = timestamp;
      this.lastArrival = arrival;
      this.hasTransit = jitterSample;
      return true;
    }
    const delta = (sequence - this.maxSeq + RTP_SEQ_MOD) % RTP_SEQ_MOD;
    if (delta > 0 && delta < MAX_DROPOUT) {
      if (sequence < this.maxSeq) this.cycles += RTP_SEQ_MOD;
      this.maxSeq = sequence;
    } else if (delta === 0) {
      // A duplicate: counted, no jitter sample.
      this.received++;
      return true;
    } else if (delta <= RTP_SEQ_MOD - MAX_MISORDER) {
      // A very large jump: accept only when the next packet follows it (the source restarted).
      if (sequence === this.badSeq) {
        this.baseSeq = sequence;
        this.maxSeq = sequence;
        this.cycles = 0;
        this.received = 0;
        this.expectedPrior = 0;
        this.receivedPrior = 0;
      } else {
        this.badSeq = (sequence + 1) & 0xffff;
        return false;
      }
    } else {
      this.outOfOrder++;
    }
    this.received++;
    if (!jitterSample) return true;
    // A.8: D = (Rj - Ri) - (Sj - Si), J += (|D| - J) / 16.
    if (this.hasTransit) {
      const d = Math.abs(arrival - this.lastArrival - timestampDelta(this.lastTransitTs, timestamp));
      this.jitter += (d - this.jitter) / 16;
    }
    this.hasTransit = true;
    this.lastArrival = arrival;
    this.lastTransitTs = timestamp;
    return true;
  }

  /** Cycles in the high 16 bits, highest sequence in the low. */
  get extendedHighest(): number {
    return this.cycles + this.maxSeq;
  }

  get expected(): number {
    return this.started ? this.extendedHighest - this.baseSeq + 1 : 0;
  }

  /** Cumulative lost: expected − received (negative with duplicates). */
  get lost(): number {
    return this.expected - this.received;
  }

  /** A report block for this source; advances the interval used for the fraction lost. */
  reportBlock(ssrc: number, lastSr = 0, delaySinceLastSr = 0): ReportBlock {
    const expected = this.expected;
    const expectedInterval = expected - this.expectedPrior;
    const receivedInterval = this.received - this.receivedPrior;
    this.expectedPrior = expected;
    this.receivedPrior = this.received;
    const lostInterval = expectedInterval - receivedInterval;
    const fractionLost = expectedInterval === 0 || lostInterval <= 0 ? 0 : Math.floor((lostInterval * 256) / expectedInterval);
    return {
      ssrc,
      fractionLost: Math.min(255, fractionLost),
      cumulativeLost: this.lost,
      highestSequence: this.extendedHighest >>> 0,
      jitter: Math.round(this.jitter),
      lastSr,
      delaySinceLastSr,
    };
  }
}
