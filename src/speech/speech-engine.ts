/**
 * The contract every text-to-speech engine meets. espeak-ng (offline, robotic) is the built-in one; an engine for
 * languages it lacks (Twi tw-GH, Ewe ee-GH: espeak-ng has no voice for either) is added by implementing this, e.g.
 * over an external TTS API, and listing its voices under its own `engine` id.
 */

export type VoiceQuality = 'robotic' | 'natural';
export type VoiceGender = 'male' | 'female' | 'unknown';

export interface SpeechVoice {
  /** What `synthesize({ voice })` takes, unique within the engine (for espeak-ng, its voice file, e.g. "gmw/en-US"). */
  id: string;
  /** BCP 47, e.g. "en-US", "fr-FR", "sw". */
  locale: string;
  /** Other locales the voice serves, with the engine's preference (lower first), e.g. en-US also serves "en". */
  alsoServes: Array<{ locale: string; priority: number }>;
  name: string;
  gender: VoiceGender;
  engine: string;
  quality: VoiceQuality;
}

export interface SynthesisRequest {
  text: string;
  /** A voice id from voices(), or a BCP 47 locale the engine resolves to its best voice. */
  voice: string;
  /** Words per minute; each engine documents its range and default. */
  rate?: number;
}

export interface SpeechEngine {
  readonly id: string;
  /** False where the engine cannot run here (program missing, no API key …); never throws. */
  available(): Promise<boolean>;
  voices(): Promise<SpeechVoice[]>;
  /** Mono 16-bit PCM at 8,000 Hz. Rejects with a SpeechError. */
  synthesize(request: SynthesisRequest): Promise<Int16Array>;
}
