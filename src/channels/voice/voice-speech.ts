import { ApiError } from '../../http/errors.js';
import { CachedSpeechEngine, EspeakSynthesizer, findVoice, OpenAiSpeechEngine, SpeechCache, type SpeechEngine, type SpeechVoice } from '../../speech/index.js';
import type { VoiceConfig } from './config.js';

export interface SayInput {
  text: string;
  locale?: string;
  voice?: string;
}

/**
 * Which engine says what: a configured provider for the locales it lists (Twi, Ewe, or any that should sound
 * natural), espeak-ng on this server for the rest. Syntheses are cached on disk per (engine, voice, text). A locale no
 * engine serves is VOICE_NOT_AVAILABLE when the call is placed: no other language's voice stands in for it.
 */
export class VoiceSpeech {
  private readonly engines: SpeechEngine[];
  private catalogue: Promise<Array<{ engine: SpeechEngine; voices: SpeechVoice[] }>> | null = null;

  constructor(private readonly o: { config: VoiceConfig['tts']; cacheDir: string; log: { warn(o: object, m: string): void } }) {
    const cache = new SpeechCache({
      dir: o.cacheDir,
      maxBytes: o.config.cacheMegabytes * 1024 * 1024,
      onError: (err) => o.log.warn({ err }, 'voice: the speech cache could not be used; synthesizing without it'),
    });
    const providers = o.config.providers.map(
      (p) => new OpenAiSpeechEngine({ id: p.id, baseUrl: p.baseUrl, apiKey: p.apiKey, model: p.model, timeoutMs: p.timeoutMs, voices: p.voices.map((v) => ({ ...v, quality: v.quality ?? 'natural' })) }),
    );
    const espeak = new EspeakSynthesizer({ binary: o.config.espeakPath });
    const wrap = (e: SpeechEngine) => (o.config.cacheMegabytes > 0 ? new CachedSpeechEngine(e, cache) : e);
    this.engines = [...providers.map(wrap), wrap(espeak)];
  }

  /** Every voice an available engine has, providers first. */
  async voices(): Promise<SpeechVoice[]> {
    return (await this.load()).flatMap((e) => e.voices);
  }

  /** The engine and voice for a say step, or VOICE_NOT_AVAILABLE naming what was asked. */
  async resolve(say: Omit<SayInput, 'text'>): Promise<{ engine: SpeechEngine; voice: SpeechVoice }> {
    const loaded = await this.load();
    const wanted = say.voice ?? say.locale ?? this.o.config.defaultLocale;
    for (const { engine, voices } of loaded) {
      const byId = say.voice ? voices.find((v) => v.id === say.voice) : undefined;
      if (byId) return { engine, voice: byId };
    }
    if (!say.voice) {
      for (const { engine, voices } of loaded) {
        const voice = findVoice(voices, wanted);
        if (voice) return { engine, voice };
      }
    }
    const engines = loaded.map((e) => e.engine.id).join(', ') || 'none (install the Debian package espeak-ng, or configure voice.tts.providers)';
    throw new ApiError('VOICE_NOT_AVAILABLE', {
      message: `No voice for ${say.voice ? `voice ${say.voice}` : `locale ${wanted}`} on this server (engines: ${engines}); GET /v1/voice/voices lists what it speaks`,
      data: say.voice ? { voice: say.voice } : { locale: wanted },
    });
  }

  async synthesize(say: SayInput): Promise<Int16Array> {
    const { engine, voice } = await this.resolve(say);
    return engine.synthesize({ text: say.text, voice: voice.id });
  }

  private load(): Promise<Array<{ engine: SpeechEngine; voices: SpeechVoice[] }>> {
    this.catalogue ??= (async () => {
      const out: Array<{ engine: SpeechEngine; voices: SpeechVoice[] }> = [];
      for (const engine of this.engines) {
        if (!(await engine.available())) continue;
        out.push({ engine, voices: await engine.voices().catch(() => []) });
      }
      return out;
    })();
    return this.catalogue;
  }
}
