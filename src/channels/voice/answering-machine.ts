import type { SpeechRun } from '../../rtp/index.js';

export type AnsweredBy = 'human' | 'machine' | 'unknown';

/** How long of the far end's first audio the guess looks at. */
export const DETECTION_WINDOW_MS = 5000;

/**
 * A best-effort guess from the shape of the first speech after answer, the cue answering-machine detectors use: a
 * person says a short greeting ("Hello?") and waits; a machine plays a long one. Speech from the start for 2.5 s or
 * more is a machine; a first utterance under 1.5 s followed by 0.8 s of silence, with little speech in all, is a
 * person; anything else (silence, a long pause before speaking, back-and-forth) is unknown. It never delays the script.
 */
export function guessAnsweredBy(runs: readonly SpeechRun[]): AnsweredBy {
  if (!runs.length) return 'unknown';
  const [start, end] = runs[0];
  const first = end - start;
  if (first >= 2500) return 'machine';
  const silenceAfter = (runs[1]?.[0] ?? DETECTION_WINDOW_MS) - end;
  const total = runs.reduce((n, r) => n + (r[1] - r[0]), 0);
  if (start < 2000 && first < 1500 && silenceAfter >= 800 && total < 2000) return 'human';
  return 'unknown';
}
