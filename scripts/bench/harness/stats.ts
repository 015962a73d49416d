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

/** A Prometheus histogram read from /metrics: cumulative counts per upper bound (le), sum and count. */
export interface HistogramSnapshot {
  buckets: Map<number, number>;
  sum: number;
  count: number;
}

/** What was observed between two snapshots of one histogram. */
export function histogramSince(before: HistogramSnapshot, after: HistogramSnapshot): HistogramSnapshot {
  const buckets = new Map<number, number>();
  for (const [le, n] of after.buckets) buckets.set(le, n - (before.buckets.get(le) ?? 0));
  return { buckets, sum: after.sum - before.sum, count: after.count - before.count };
}

/**
 * The q-quantile (0–1) of a histogram, interpolated linearly inside its bucket as Prometheus's histogram_quantile
 * does: as coarse as the buckets (an estimate, not a sample). Past the last finite bound it answers that bound.
 */
export function histogramQuantile(h: HistogramSnapshot, q: number): number {
  if (h.count <= 0) return NaN;
  const rank = q * h.count;
  let lower = 0;
  let below = 0;
  for (const le of [...h.buckets.keys()].sort((a, b) => a - b)) {
    const n = h.buckets.get(le)!;
    if (n >= rank) return le === Infinity ? lower : lower + ((le - lower) * (rank - below)) / Math.max(1, n - below);
    if (le !== Infinity) lower = le;
    below = n;
  }
  return lower;
}
