/**
 * Speech-like audio for the simulator: per word, one tone burst per syllable (a voiced-sounding fundamental with two
 * harmonics under a smooth envelope), words apart by short pauses. Not speech, but never silence, and its length
 * grows with the text like speech does, which is what the engine's tests measure.
 */

export interface SpeechToneOptions {
  sampleRate: number;
  /** Speaking time per character of a word. */
  msPerCharacter: number;
  /** The API's speed: 2 speaks in half the time. */
  speed: number;
  /** Longer texts are cut at this many seconds. */
  maxSeconds: number;
}

const WORD_GAP_SECONDS = 0.06;
const AMPLITUDE = 0.3 * 32767;

export function speechTones(text: string, options: SpeechToneOptions): Int16Array {
  const { sampleRate, msPerCharacter, speed, maxSeconds } = options;
  const words = text.split(/\s+/).filter((word) => word.length > 0);
  const maxSamples = Math.floor(maxSeconds * sampleRate);
  let total = 0;
  for (const word of words) total += wordSamples(word, sampleRate, msPerCharacter, speed) + gapSamples(sampleRate, speed);
  const out = new Int16Array(Math.min(maxSamples, Math.max(total, 1)));
  let at = 0;
  for (const word of words) {
    if (at >= out.length) break;
    const length = wordSamples(word, sampleRate, msPerCharacter, speed);
    const syllables = Math.max(1, Math.round([...word].length / 2.5));
    const syllableLength = Math.floor(length / syllables);
    for (let s = 0; s < syllables; s++) {
      // Pitch from the syllable's letters: the same text always sounds the same, different words differ.
      const pitch = 140 + (hash(word, s) % 110);
      at = writeSyllable(out, at, syllableLength, pitch, sampleRate);
    }
    at += gapSamples(sampleRate, speed);
  }
  return out;
}

function wordSamples(word: string, sampleRate: number, msPerCharacter: number, speed: number): number {
  return Math.round(([...word].length * msPerCharacter * sampleRate) / 1000 / speed);
}

function gapSamples(sampleRate: number, speed: number): number {
  return Math.round((WORD_GAP_SECONDS * sampleRate) / speed);
}

/** A syllable in `length` samples from `at` (85 % voiced, the rest a pause); returns where the next one starts. */
function writeSyllable(out: Int16Array, at: number, length: number, pitch: number, sampleRate: number): number {
  const voiced = Math.floor(length * 0.85);
  const end = Math.min(out.length, at + voiced);
  const step = (2 * Math.PI * pitch) / sampleRate;
  for (let i = at; i < end; i++) {
    const n = i - at;
    const envelope = Math.sin((Math.PI * n) / voiced);
    const phase = step * n;
    out[i] = Math.round(AMPLITUDE * envelope * (0.6 * Math.sin(phase) + 0.3 * Math.sin(2 * phase) + 0.1 * Math.sin(3 * phase)));
  }
  return at + length;
}

function hash(word: string, salt: number): number {
  let h = 2166136261 ^ salt;
  for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619);
  return h >>> 0;
}
