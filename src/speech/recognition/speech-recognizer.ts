/**
 * The contract every speech-to-text engine meets. Pocketsphinx (offline, US English) is the built-in one; cloud
 * engines are added as adapters (an OpenAI-compatible transcription endpoint is one) and list the locales they serve
 * under their own `id`, so the catalogue can say which engine hears which language.
 */

export interface RecognitionRequest {
  /** One utterance: mono 16-bit PCM at 8,000 Hz, as a call carries it. */
  pcm: Int16Array;
  /** BCP 47, e.g. "en-US"; an engine refuses a locale it does not serve (SpeechInputError). */
  locale: string;
  /** Words and phrases the caller is likely to say (names, products); engines that cannot use them ignore them. */
  hints?: string[];
}

export interface RecognitionResult {
  /** What was heard, trimmed; empty when nothing was (silence, noise). */
  text: string;
  /** 0–1, when the engine gives one. */
  confidence?: number;
  /** Time the engine took, in milliseconds (for per-turn latency figures). */
  engineMs: number;
}

export interface SpeechRecognizer {
  readonly id: string;
  /** False where the engine cannot run here (program or model missing, no API key …); never throws. */
  available(): Promise<boolean>;
  /** The BCP 47 locales it serves, for the catalogue. */
  locales(): Promise<string[]>;
  /** Rejects with a SpeechError (SpeechInputError for a locale it lacks or unusable audio). */
  recognize(request: RecognitionRequest): Promise<RecognitionResult>;
}

/** "en-US" serves "en-us" and "en"; a bare language is served by any of its locales. */
export function servesLocale(served: readonly string[], wanted: string): boolean {
  const want = wanted.toLowerCase();
  const language = want.split('-')[0];
  return served.some((locale) => {
    const have = locale.toLowerCase();
    return have === want || have === language || (want === language && have.split('-')[0] === language);
  });
}
