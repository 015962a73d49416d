import type { SpeechCache } from './speech-cache.js';
import type { SpeechEngine, SpeechVoice, SynthesisRequest } from './speech-engine.js';

/** An engine whose syntheses go through a SpeechCache: a prompt said twice is synthesized once. */
export class CachedSpeechEngine implements SpeechEngine {
  readonly id: string;

  constructor(
    private readonly engine: SpeechEngine,
    private readonly cache: SpeechCache,
  ) {
    this.id = engine.id;
  }

  available(): Promise<boolean> {
    return this.engine.available();
  }

  voices(): Promise<SpeechVoice[]> {
    return this.engine.voices();
  }

  synthesize(request: SynthesisRequest): Promise<Int16Array> {
    const key = { engine: this.engine.id, voice: request.voice, rate: request.rate, text: request.text };
    return this.cache.get(key, () => this.engine.synthesize(request));
  }
}
