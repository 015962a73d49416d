import { performance } from 'node:perf_hooks';
import { SpeechInputError } from '../errors.js';
import type { RecognitionRequest, RecognitionResult, SpeechRecognizer } from './speech-recognizer.js';
import { servesLocale } from './speech-recognizer.js';

export interface ScriptedRecognizerOptions {
  /** Default "scripted". */
  id?: string;
  /** Default ["en-US"]. */
  locales?: string[];
}

/**
 * A caller whose words are written in advance, for tests and demos: each utterance, whatever its audio, is heard as
 * the next queued transcript, in order; with the queue empty, as silence (""). Every request is kept, so a test can
 * check what audio reached "the ear" and with which locale and hints.
 */
export class ScriptedRecognizer implements SpeechRecognizer {
  readonly id: string;
  readonly requests: Array<{ samples: number; locale: string; hints?: string[]; text: string }> = [];
  private readonly queue: string[];
  private readonly served: string[];

  constructor(transcripts: readonly string[] = [], options: ScriptedRecognizerOptions = {}) {
    this.id = options.id ?? 'scripted';
    this.served = options.locales ?? ['en-US'];
    this.queue = [...transcripts];
  }

  /** Queues what the next utterances will be heard as. */
  push(...transcripts: string[]): void {
    this.queue.push(...transcripts);
  }

  /** Transcripts not yet heard. */
  get pending(): number {
    return this.queue.length;
  }

  available(): Promise<boolean> {
    return Promise.resolve(true);
  }

  locales(): Promise<string[]> {
    return Promise.resolve([...this.served]);
  }

  recognize(request: RecognitionRequest): Promise<RecognitionResult> {
    const started = performance.now();
    if (!servesLocale(this.served, request.locale)) {
      return Promise.reject(new SpeechInputError(`recognizer "${this.id}" is not scripted for "${request.locale}"`));
    }
    const text = this.queue.shift() ?? '';
    this.requests.push({ samples: request.pcm.length, locale: request.locale, ...(request.hints ? { hints: [...request.hints] } : {}), text });
    return Promise.resolve({ text, confidence: 1, engineMs: performance.now() - started });
  }
}
