/**
 * Sample-rate conversion for telephony: a polyphase windowed-sinc filter.
 *
 * The filter is a Kaiser-windowed sinc (β = 5.65, 60 dB stopband) whose passband ends at 42.5 % and stopband starts
 * at 50 % of the lower of the two rates: for 8 kHz output, flat to 3,400 Hz (the telephone band) and at least 60 dB
 * down from 4,000 Hz, so nothing above the new Nyquist folds back into the band. Its length follows from Kaiser's
 * formula (≈ 267 taps at 44.1 kHz in). It is applied around each output instant (zero phase: output sample n is the
 * input at time n · inRate / outRate), with one set of taps per fractional position. For rate pairs whose ratio
 * needs at most 1,024 positions (every common rate against 8 kHz: 44.1 kHz needs 80) the taps are exact; otherwise
 * the position is rounded to 1/1,024 of an input sample, a timing error far below G.711's own noise.
 */

export const TELEPHONY_RATE = 8_000;

const STOPBAND_DB = 60;
const PASSBAND_EDGE = 0.425;
const STOPBAND_EDGE = 0.5;
const MAX_PHASES = 1_024;
const MAX_RATE = 384_000;

interface FilterBank {
  /** Taps each side of the output instant: an output reads 2 · half input samples. */
  half: number;
  /** Fractional positions per input sample; the table has one more row, for a position of exactly 1. */
  phases: number;
  taps: Float32Array;
}

/** A streaming resampler: feed chunks to process(), then call flush() once at the end. */
export class Resampler {
  private readonly bank: FilterBank;
  private readonly width: number;
  /** Input samples from absolute index `bufStart` (negative at first: the silence before the start). */
  private buf: Int16Array;
  private bufLen: number;
  private bufStart: number;
  private received = 0;
  private produced = 0;
  private flushed = false;

  constructor(
    readonly inRate: number,
    readonly outRate: number = TELEPHONY_RATE,
  ) {
    for (const rate of [inRate, outRate]) {
      if (!Number.isInteger(rate) || rate < 1 || rate > MAX_RATE) throw new RangeError(`unsupported sample rate ${rate}`);
    }
    this.bank = filterBank(inRate, outRate);
    this.width = 2 * this.bank.half;
    this.buf = new Int16Array(4_096 + this.width);
    this.bufLen = this.bank.half;
    this.bufStart = -this.bank.half;
  }

  /** Resamples one chunk; the output lags the input by the filter's half length until flush(). */
  process(chunk: Int16Array): Int16Array {
    if (this.flushed) throw new Error('Resampler: process() after flush()');
    this.append(chunk, chunk.length);
    this.received += chunk.length;
    return this.emit(this.received - 1 - this.bank.half);
  }

  /** The rest of the output, as if silence followed the input: ceil(inputLength · outRate / inRate) samples in all. */
  flush(): Int16Array {
    if (this.flushed) return new Int16Array(0);
    this.flushed = true;
    this.append(undefined, this.bank.half + 1);
    return this.emit(this.received - 1);
  }

  /** Emits every output whose input instant is at or before `lastIndex`. */
  private emit(lastIndex: number): Int16Array {
    const { inRate, outRate, width } = this;
    const { phases, taps, half } = this.bank;
    const end = lastIndex < 0 ? 0 : Math.ceil(((lastIndex + 1) * outRate) / inRate);
    const count = Math.max(0, end - this.produced);
    const out = new Int16Array(count);
    const buf = this.buf;
    for (let k = 0; k < count; k++) {
      const position = (this.produced + k) * inRate;
      const index = Math.floor(position / outRate);
      const phase = Math.round(((position - index * outRate) * phases) / outRate);
      const row = phase * width;
      const first = index - half + 1 - this.bufStart;
      let acc = 0;
      for (let j = 0; j < width; j++) acc += taps[row + j] * buf[first + j];
      out[k] = acc >= 32767 ? 32767 : acc <= -32768 ? -32768 : Math.round(acc);
    }
    this.produced += count;
    this.dropConsumed();
    return out;
  }

  /** Keeps only the samples the next output still reads. */
  private dropConsumed(): void {
    const nextIndex = Math.floor((this.produced * this.inRate) / this.outRate);
    const drop = Math.min(this.bufLen, nextIndex - this.bank.half + 1 - this.bufStart);
    if (drop <= 0) return;
    this.buf.copyWithin(0, drop, this.bufLen);
    this.bufLen -= drop;
    this.bufStart += drop;
  }

  /** Appends `samples`, or `length` zeros when samples is undefined. */
  private append(samples: Int16Array | undefined, length: number): void {
    if (this.bufLen + length > this.buf.length) {
      const grown = new Int16Array(Math.max(this.buf.length * 2, this.bufLen + length));
      grown.set(this.buf.subarray(0, this.bufLen));
      this.buf = grown;
    }
    if (samples) this.buf.set(samples, this.bufLen);
    else this.buf.fill(0, this.bufLen, this.bufLen + length);
    this.bufLen += length;
  }
}

/** Resamples a whole signal (to 8 kHz unless told). */
export function resample(pcm: Int16Array, inRate: number, outRate: number = TELEPHONY_RATE): Int16Array {
  if (inRate === outRate) return pcm.slice();
  const resampler = new Resampler(inRate, outRate);
  const body = resampler.process(pcm);
  const tail = resampler.flush();
  const out = new Int16Array(body.length + tail.length);
  out.set(body);
  out.set(tail, body.length);
  return out;
}

/** A few rate pairs are ever live at once; a table is ≤ 1.2 MB, so only the latest are kept. */
const banks = new Map<string, FilterBank>();
const MAX_BANKS = 8;

function filterBank(inRate: number, outRate: number): FilterBank {
  const key = `${inRate}:${outRate}`;
  const known = banks.get(key);
  if (known) return known;
  const bank = designFilterBank(inRate, outRate);
  if (banks.size >= MAX_BANKS) banks.delete(banks.keys().next().value as string);
  banks.set(key, bank);
  return bank;
}

function designFilterBank(inRate: number, outRate: number): FilterBank {
  const lower = Math.min(inRate, outRate);
  // Both in cycles per input sample.
  const cutoff = (((PASSBAND_EDGE + STOPBAND_EDGE) / 2) * lower) / inRate;
  const transition = ((STOPBAND_EDGE - PASSBAND_EDGE) * lower) / inRate;
  const beta = 0.1102 * (STOPBAND_DB - 8.7);
  const order = Math.ceil((STOPBAND_DB - 7.95) / (2.285 * 2 * Math.PI * transition));
  const half = Math.ceil(order / 2) + 1;
  const width = 2 * half;
  const phases = Math.min(outRate / gcd(inRate, outRate), MAX_PHASES);
  const taps = new Float32Array((phases + 1) * width);
  const i0Beta = besselI0(beta);
  for (let p = 0; p <= phases; p++) {
    const fraction = p / phases;
    let sum = 0;
    for (let j = 0; j < width; j++) {
      // Distance in input samples from the output instant to input sample j of the window.
      const x = fraction + half - 1 - j;
      const r = x / half;
      const window = r * r >= 1 ? 0 : besselI0(beta * Math.sqrt(1 - r * r)) / i0Beta;
      const value = 2 * cutoff * sinc(2 * cutoff * x) * window;
      taps[p * width + j] = value;
      sum += value;
    }
    // Unity gain at DC for every position, so a constant stays constant.
    for (let j = 0; j < width; j++) taps[p * width + j] /= sum;
  }
  return { half, phases, taps };
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const a = Math.PI * x;
  return Math.sin(a) / a;
}

/** Modified Bessel function of the first kind, order 0 (power series; converges fast for the β used here). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 50; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
