/** Latency recording and percentiles for the bench load generators. */

export interface Percentiles {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/**
 * Fixed-capacity latency store (ms, as float). Bounded: samples beyond the capacity are dropped and counted, so a
 * run can never grow memory without limit.
 */
export class LatencyRecorder {
  private readonly values: Float64Array;
  private n = 0;
  dropped = 0;

  constructor(capacity: number) {
    this.values = new Float64Array(Math.max(1, capacity));
  }

  add(ms: number): void {
    if (this.n < this.values.length) this.values[this.n++] = ms;
    else this.dropped++;
  }

  get count(): number {
    return this.n;
  }

  summary(): Percentiles {
    return percentiles(this.values.subarray(0, this.n));
  }
}

/** Nearest-rank percentiles of the given samples (the array is sorted in place). */
export function percentiles(samples: Float64Array): Percentiles {
  const n = samples.length;
  if (n === 0) return { count: 0, p50: NaN, p95: NaN, p99: NaN, max: NaN, mean: NaN };
  samples.sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += samples[i];
  const rank = (p: number): number => samples[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))];
  return { count: n, p50: rank(50), p95: rank(95), p99: rank(99), max: samples[n - 1], mean: sum / n };
}
