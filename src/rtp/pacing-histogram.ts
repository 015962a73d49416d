/**
 * Send-time error against the 20 ms schedule, in µs, as a fixed histogram (no allocation per sample): 10 µs steps
 * below 1 ms, 100 µs to 10 ms, 1 ms to 100 ms, then one overflow bucket. Percentiles are the bucket's upper edge.
 */
const BUCKETS = 100 + 90 + 90 + 1;

function bucketOf(us: number): number {
  if (us < 1000) return Math.max(0, Math.floor(us / 10));
  if (us < 10_000) return 100 + Math.floor((us - 1000) / 100);
  if (us < 100_000) return 190 + Math.floor((us - 10_000) / 1000);
  return BUCKETS - 1;
}

function upperEdge(bucket: number): number {
  if (bucket < 100) return (bucket + 1) * 10;
  if (bucket < 190) return 1000 + (bucket - 99) * 100;
  if (bucket < 280) return 10_000 + (bucket - 189) * 1000;
  return Infinity;
}

export interface PacingSummary {
  samples: number;
  maxUs: number;
  meanUs: number;
  p99Us: number;
  /** The bucket counts, to merge summaries of many sessions (PacingHistogram.from). */
  histogram: number[];
}

export class PacingHistogram {
  private readonly counts = new Uint32Array(BUCKETS);
  samples = 0;
  maxUs = 0;
  private sumUs = 0;

  record(us: number): void {
    const magnitude = us < 0 ? -us : us;
    this.counts[bucketOf(magnitude)]++;
    this.samples++;
    this.sumUs += magnitude;
    if (magnitude > this.maxUs) this.maxUs = magnitude;
  }

  /** The smallest bucket edge at or below which `p` (0–1) of the samples fall; the max when it lies in the overflow. */
  percentile(p: number): number {
    if (this.samples === 0) return 0;
    const target = Math.ceil(p * this.samples);
    let seen = 0;
    for (let b = 0; b < BUCKETS; b++) {
      seen += this.counts[b];
      if (seen >= target) return Math.min(upperEdge(b), this.maxUs);
    }
    return this.maxUs;
  }

  merge(summary: PacingSummary): void {
    for (let b = 0; b < BUCKETS && b < summary.histogram.length; b++) this.counts[b] += summary.histogram[b];
    this.samples += summary.samples;
    this.sumUs += summary.meanUs * summary.samples;
    if (summary.maxUs > this.maxUs) this.maxUs = summary.maxUs;
  }

  summary(): PacingSummary {
    return {
      samples: this.samples,
      maxUs: Math.round(this.maxUs),
      meanUs: this.samples ? Math.round(this.sumUs / this.samples) : 0,
      p99Us: Math.round(this.percentile(0.99)),
      histogram: Array.from(this.counts),
    };
  }
}
