/** In-band DTMF: the 16 row/column pairs found by Goertzel on decoded 8 kHz PCM, checked and debounced. */
export const DTMF_ROWS = [697, 770, 852, 941] as const;
export const DTMF_COLUMNS = [1209, 1336, 1477, 1633] as const;
/** The keypad, row by row: key = KEYPAD[row * 4 + column]. */
export const KEYPAD = '123A456B789C*0#D';

/**
 * Goertzel power of `frequency` over pcm[start, start+length): (A·N/2)² for a sine of amplitude A that fills the
 * window, so it compares with the window's energy Σx² (A²·N/2) times N/2.
 */
export function goertzelPower(pcm: ArrayLike<number>, frequency: number, start = 0, length = pcm.length - start, sampleRate = 8000): number {
  const coeff = 2 * Math.cos((2 * Math.PI * frequency) / sampleRate);
  let s1 = 0;
  let s2 = 0;
  for (let i = start, end = start + length; i < end; i++) {
    const s = pcm[i] + coeff * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return s1 * s1 + s2 * s2 - coeff * s1 * s2;
}

export interface DtmfDetectorOptions {
  /** Samples per analysis block (default 205: ~25 ms, the classic size for 8 kHz, bins near all 8 tones). */
  blockSize?: number;
  /** Minimum RMS of a block to look at (default 80 ≈ -52 dBFS). */
  minRms?: number;
  /** Share of the block's energy the two tones must hold (default 0.6). */
  minToneShare?: number;
  /** Column louder than row by at most this, dB (normal twist; default 8). */
  maxTwistDb?: number;
  /** Row louder than column by at most this, dB (reverse twist; default 4). */
  maxReverseTwistDb?: number;
  /** The winning tone must beat the others of its group by this, dB (default 9). */
  minPeakRatioDb?: number;
  /** Consecutive blocks a key must hold before it is reported (default 2). */
  holdBlocks?: number;
}

const dbToPower = (db: number): number => 10 ** (db / 10);

/**
 * Feed it PCM of any chunk size; it returns the keys that completed their hold. A key is reported once per press:
 * it must be gone (or replaced) for a block before it counts again.
 */
export class InbandDtmfDetector {
  private readonly block: Float64Array;
  private filled = 0;
  private readonly rows = new Float64Array(4);
  private readonly columns = new Float64Array(4);
  private candidate = -1;
  private candidateBlocks = 0;
  private reported = -1;
  private readonly minEnergy: number;
  private readonly minToneShare: number;
  private readonly maxTwist: number;
  private readonly maxReverseTwist: number;
  private readonly minPeakRatio: number;
  private readonly holdBlocks: number;

  constructor(options: DtmfDetectorOptions = {}) {
    const size = options.blockSize ?? 205;
    this.block = new Float64Array(size);
    const rms = options.minRms ?? 80;
    this.minEnergy = rms * rms * size;
    this.minToneShare = options.minToneShare ?? 0.6;
    this.maxTwist = dbToPower(options.maxTwistDb ?? 8);
    this.maxReverseTwist = dbToPower(options.maxReverseTwistDb ?? 4);
    this.minPeakRatio = dbToPower(options.minPeakRatioDb ?? 9);
    this.holdBlocks = options.holdBlocks ?? 2;
  }

  /** Consumes samples; returns the keys detected (usually none; an empty string when none). */
  push(pcm: Int16Array, start = 0, length = pcm.length - start): string {
    let digits = '';
    const size = this.block.length;
    for (let i = start, end = start + length; i < end; i++) {
      this.block[this.filled++] = pcm[i];
      if (this.filled === size) {
        this.filled = 0;
        const digit = this.analyse();
        if (digit >= 0) digits += KEYPAD[digit];
      }
    }
    return digits;
  }

  /** The key index reported by this block, or -1. */
  private analyse(): number {
    const found = this.classify();
    if (found !== this.candidate) {
      this.candidate = found;
      this.candidateBlocks = 0;
    }
    this.candidateBlocks++;
    if (found < 0) {
      this.reported = -1;
      return -1;
    }
    if (this.candidateBlocks >= this.holdBlocks && this.reported !== found) {
      this.reported = found;
      return found;
    }
    return -1;
  }

  /** The key this block holds, or -1. */
  private classify(): number {
    const block = this.block;
    const n = block.length;
    let energy = 0;
    for (let i = 0; i < n; i++) energy += block[i] * block[i];
    if (energy < this.minEnergy) return -1;
    for (let i = 0; i < 4; i++) {
      this.rows[i] = goertzelPower(block, DTMF_ROWS[i]);
      this.columns[i] = goertzelPower(block, DTMF_COLUMNS[i]);
    }
    const row = strongest(this.rows);
    const column = strongest(this.columns);
    const rowPower = this.rows[row];
    const columnPower = this.columns[column];
    if ((rowPower + columnPower) / ((energy * n) / 2) < this.minToneShare) return -1;
    if (columnPower > rowPower * this.maxTwist || rowPower > columnPower * this.maxReverseTwist) return -1;
    for (let i = 0; i < 4; i++) {
      if (i !== row && this.rows[i] * this.minPeakRatio > rowPower) return -1;
      if (i !== column && this.columns[i] * this.minPeakRatio > columnPower) return -1;
    }
    return row * 4 + column;
  }
}

function strongest(powers: Float64Array): number {
  let best = 0;
  for (let i = 1; i < powers.length; i++) if (powers[i] > powers[best]) best = i;
  return best;
}
