import { AudioFormatError, wavToTelephonyPcm } from '../../audio/index.js';
import { GuardedHttpError, type GuardedHttp } from '../../security/guarded-http.js';
import { SpeechError, type SpeechEngine } from '../../speech/index.js';
import type { CallStep } from './call-script.js';

/** Why a call's audio could not be prepared: the call fails with this code and message, before it is dialled. */
export class CallAudioError extends Error {
  constructor(
    readonly code: 'PLAYBACK_FAILED' | 'SPEECH_FAILED' | 'AUDIO_TOO_LONG',
    message: string,
  ) {
    super(message);
  }
}

/** The audio of a script's steps, ready before the call is dialled: by step index (a gather's prompt under its index). */
export type PreparedAudio = Map<number, Int16Array>;

/**
 * Synthesizes every `say` and fetches and decodes every `play` of a script before the call rings anyone, so a bad
 * file or an unavailable voice fails the call with a clear reason instead of leaving a person listening to silence.
 * Files come through the guarded client (SSRF guard, checked address, size cap, no redirects); the whole call's audio
 * is bounded by `maxSeconds`.
 */
export async function prepareAudio(
  steps: readonly CallStep[],
  o: { speech: (say: { text: string; locale?: string; voice?: string }) => Promise<Int16Array>; http: GuardedHttp; maxBytes: number; maxSeconds: number; timeoutMs: number },
): Promise<PreparedAudio> {
  const out: PreparedAudio = new Map();
  const fetched = new Map<string, Int16Array>();
  let samples = 0;
  const keep = (i: number, pcm: Int16Array, loop = 1) => {
    samples += pcm.length * loop;
    if (samples > o.maxSeconds * 8000) throw new CallAudioError('AUDIO_TOO_LONG', `the call's audio passes ${o.maxSeconds} s (voice.playback.maxSeconds)`);
    out.set(i, pcm);
  };
  const speak = async (say: { text: string; locale?: string; voice?: string }) => {
    try {
      return await o.speech(say);
    } catch (err) {
      if (err instanceof SpeechError) throw new CallAudioError('SPEECH_FAILED', `text-to-speech (${say.locale ?? say.voice ?? 'default voice'}): ${err.message}`);
      throw err;
    }
  };
  const fetchAudio = async (url: string) => {
    const known = fetched.get(url);
    if (known) return known;
    const pcm = await fetchPlayableAudio(url, o);
    fetched.set(url, pcm);
    return pcm;
  };
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if ('say' in step) keep(i, await speak(step.say), step.say.loop ?? 1);
    else if ('play' in step) keep(i, await fetchAudio(step.play.url), step.play.loop ?? 1);
    else if ('gather' in step && step.gather.prompt) {
      const p = step.gather.prompt;
      keep(i, p.say ? await speak(p.say) : await fetchAudio(p.play!.url));
    }
  }
  return out;
}

/**
 * One audio file as 8 kHz audio: fetched through the guarded client (SSRF guard, checked address, size cap, no
 * redirects) and decoded; rejects with CallAudioError PLAYBACK_FAILED saying why. Also what an agent's relay `play` uses.
 */
export async function fetchPlayableAudio(url: string, o: { http: GuardedHttp; maxBytes: number; maxSeconds: number; timeoutMs: number; signal?: AbortSignal }): Promise<Int16Array> {
  let body: Buffer;
  try {
    const res = await o.http.request(url, { method: 'GET', timeoutMs: o.timeoutMs, maxBytes: o.maxBytes, headers: { accept: 'audio/wav, audio/x-wav, audio/*' }, ...(o.signal ? { signal: o.signal } : {}) });
    if (res.status < 200 || res.status >= 300) throw new CallAudioError('PLAYBACK_FAILED', `${url}: the server answered ${res.status}`);
    body = res.body;
  } catch (err) {
    if (err instanceof CallAudioError) throw err;
    if (err instanceof GuardedHttpError) {
      const why = err.kind === 'TOO_LARGE' ? `larger than ${o.maxBytes} bytes (voice.playback.maxBytes)` : err.message;
      throw new CallAudioError('PLAYBACK_FAILED', `${url}: ${why}`);
    }
    throw err;
  }
  try {
    return wavToTelephonyPcm(body, { maxBytes: o.maxBytes, maxDurationSeconds: o.maxSeconds });
  } catch (err) {
    if (err instanceof AudioFormatError) throw new CallAudioError('PLAYBACK_FAILED', `${url}: ${err.message}`);
    throw err;
  }
}

export type { SpeechEngine };
