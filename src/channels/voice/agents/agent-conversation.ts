/**
 * One agent's conversation on an answered call: the first message at once, then turn by turn: the caller's
 * utterance (cut by voice activity detection in the media worker) is recognised, handed to the brain, and what the
 * brain says is synthesised and played sentence by sentence, in turn with the audio a relay asks to play (fetched
 * through the SSRF guard). The caller speaking over the agent stops the playback (barge-in). Silence, the time
 * limit, an end phrase, a tool or a failure ends it; the call session then hangs up.
 */
import type { MediaHandle } from '../../../rtp/index.js';
import type { SpeechRecognizer } from '../../../speech/index.js';
import type { AgentBrain, BrainSetup, BrainToolRecord } from './agent-brain.js';
import type { AgentConfig } from './agent-config.js';
import { fillVariables } from './agent-tools.js';

/** One line of the transcript as stored with the call. */
export type TranscriptEntry =
  | { role: 'agent'; text: string; interrupted?: boolean; latency?: TurnLatency }
  | { role: 'caller'; text: string; sttMs: number; source: 'speech' | 'dtmf' }
  | { role: 'tool'; tool: BrainToolRecord }
  | { role: 'event'; event: string; detail?: Record<string, unknown> };

/** Where the time of one turn went, from the end of the caller's speech to the agent's first audio. */
export interface TurnLatency {
  /** Speech-to-text of the utterance. */
  sttMs: number;
  /** From the text handed to the brain to its first sentence. */
  brainMs: number;
  /** Synthesis of that first sentence. */
  ttsMs: number;
  /** End of speech (as the VAD heard it) to the first audio queued for sending. */
  totalMs: number;
}

export type ConversationEnd =
  | { reason: 'agent-ended' | 'end-phrase' | 'silence' | 'caller-hangup'; detail?: Record<string, unknown> }
  | { reason: 'failed'; code: string; message: string };

/** Fetches and decodes a `play` source to 8 kHz audio (through the SSRF-guarded client); rejects saying why. */
export type PlayFetcher = (url: string, signal: AbortSignal) => Promise<Int16Array>;

export interface ConversationOptions {
  media: MediaHandle;
  brain: AgentBrain;
  recognizer: SpeechRecognizer;
  /** Text to 8 kHz audio in the agent's voice (synthesis errors reject). */
  speak: (text: string) => Promise<Int16Array>;
  config: AgentConfig;
  setup: BrainSetup;
  /** The first message already synthesised (done while the call rang, so the caller hears it at once). */
  firstMessage: Int16Array | null;
  record: (entry: TranscriptEntry) => void;
  /** The call ends (hang-up either way, time limit): the conversation stops. */
  signal: AbortSignal;
  /** How `play` sources are fetched; without it they are recorded as ignored, not played. */
  fetchPlay?: PlayFetcher;
}

interface Spoken {
  /** What is said; empty for audio played from a URL. */
  text: string;
  audio: Promise<Int16Array | null>;
  /** The URL of audio played (a relay's `play`). */
  source?: string;
}

export class AgentConversation {
  private readonly queue: Spoken[] = [];
  private speaking = false;
  private playing: Spoken | null = null;
  /** Sentences of the current answer already played, for the brain when the caller cuts in. */
  private heard: string[] = [];
  private ending: ConversationEnd | null = null;
  private endWhenQuiet: ConversationEnd | null = null;
  private silenceTimer: NodeJS.Timeout | null = null;
  private resolveDone!: (end: ConversationEnd) => void;
  private readonly done = new Promise<ConversationEnd>((resolve) => (this.resolveDone = resolve));
  /** The turn being measured: when the caller's speech ended, and the steps so far. */
  private pendingTurn: { endedAt: number; sttMs: number; promptedAt: number; firstSayAt?: number; ttsMs?: number } | null = null;
  private recognising = 0;

  private quietWaiters: Array<() => void> = [];
  /** The last `play` source fetched: a loop (the same URL N times over) is fetched once; only one file is held. */
  private lastPlay: { url: string; audio: Promise<Int16Array | null> } | null = null;

  constructor(private readonly o: ConversationOptions) {}

  /**
   * Resolves once what the agent was given to say has been played (at once when it is silent): a transfer waits for
   * "let me put you through" to be heard before the call leaves. Also resolves when the conversation ends.
   */
  quiet(): Promise<void> {
    if ((!this.speaking && this.queue.length === 0) || this.ending) return Promise.resolve();
    return new Promise((resolve) => this.quietWaiters.push(resolve));
  }

  private wakeQuiet(): void {
    for (const w of this.quietWaiters.splice(0)) w();
  }

  async run(): Promise<ConversationEnd> {
    const { media, brain, signal } = this.o;
    if (signal.aborted) return { reason: 'caller-hangup' };
    const onAbort = () => this.finish({ reason: 'caller-hangup' });
    signal.addEventListener('abort', onAbort, { once: true });
    brain.on('say', (text, last) => this.onSay(text, last));
    brain.on('play', (url) => this.onPlay(url));
    brain.on('digits', (digits) => media.sendDigits(digits));
    brain.on('tool', (tool) => this.o.record({ role: 'tool', tool }));
    brain.on('end', (handoff) => this.endAfterSpeaking({ reason: 'agent-ended', ...(handoff ? { detail: handoff } : {}) }));
    brain.on('failed', (failure) => void this.onFailure(failure.code, failure.message));
    media.on('speechStart', () => this.onCallerSpeech());
    media.on('utterance', (pcm, info) => void this.onUtterance(pcm, info.endMs));
    media.on('digit', (digit) => {
      this.o.record({ role: 'caller', text: digit, sttMs: 0, source: 'dtmf' });
      brain.dtmf(digit);
    });
    // The first message plays while the brain starts (a relay connecting): the caller hears no silent gap.
    const first = this.o.config.firstMessage ? fillVariables(this.o.config.firstMessage, this.o.setup.variables) : null;
    if (first && this.o.firstMessage) this.enqueue(first, Promise.resolve(this.o.firstMessage));
    else if (first) this.enqueue(first, this.synthesise(first));
    try {
      await brain.start(this.o.setup);
      if (!first) this.armSilence();
    } catch (err) {
      const failure = err as Error & { code?: string };
      await this.onFailure(typeof failure.code === 'string' ? failure.code : 'BRAIN_START_FAILED', failure.message);
    }
    return this.done.finally(() => signal.removeEventListener('abort', onAbort));
  }

  /** The caller started speaking: while the agent talks, that is barge-in. */
  private onCallerSpeech(): void {
    this.clearSilence();
    if (!this.speaking || this.endWhenQuiet) return;
    const heard = [...this.heard, ...(this.playing?.text ? [`${this.playing.text.split(/\s+/).slice(0, 3).join(' ')}`] : [])].join(' ');
    this.queue.length = 0;
    this.o.media.interrupt();
    if (this.playing) this.o.record(this.playedEntry(this.playing, { interrupted: true }));
    this.playing = null;
    this.speaking = false;
    this.heard = [];
    this.wakeQuiet();
    this.o.brain.interrupt(heard);
  }

  private async onUtterance(pcm: Int16Array, endMs: number): Promise<void> {
    if (this.ending) return;
    const endedAt = performance.now();
    this.recognising++;
    const started = performance.now();
    let text = '';
    try {
      text = (await this.o.recognizer.recognize({ pcm, locale: this.o.setup.language })).text.trim();
    } catch (err) {
      this.o.record({ role: 'event', event: 'stt-failed', detail: { message: (err as Error).message, atMs: endMs } });
    } finally {
      this.recognising--;
    }
    const sttMs = Math.round(performance.now() - started);
    if (this.ending) return;
    if (text === '') {
      if (!this.speaking) this.armSilence();
      return;
    }
    this.o.record({ role: 'caller', text, sttMs, source: 'speech' });
    this.pendingTurn = { endedAt, sttMs, promptedAt: performance.now() };
    this.o.brain.prompt(text);
  }

  private onSay(text: string, last: boolean): void {
    if (this.ending) return;
    if (text !== '') {
      const turn = this.pendingTurn;
      if (turn && turn.firstSayAt === undefined) turn.firstSayAt = performance.now();
      this.enqueue(text, this.synthesise(text));
      if (this.hasEndPhrase(text)) this.endAfterSpeaking({ reason: 'end-phrase', detail: { text } });
    }
    if (last && !this.speaking && this.queue.length === 0) this.armSilence();
  }

  /** Audio from a URL, in turn with what is said; a source that cannot be had is recorded and skipped. */
  private onPlay(url: string): void {
    if (this.ending) return;
    const fetcher = this.o.fetchPlay;
    if (!fetcher) {
      this.o.record({ role: 'event', event: 'play-ignored', detail: { source: url, why: 'this server cannot fetch audio for agents' } });
      return;
    }
    const turn = this.pendingTurn;
    if (turn && turn.firstSayAt === undefined) turn.firstSayAt = performance.now();
    if (this.lastPlay?.url !== url) {
      const audio = fetcher(url, this.o.signal).catch((err: Error) => {
        if (this.lastPlay?.audio === audio) this.lastPlay = null;
        if (!this.o.signal.aborted) this.o.record({ role: 'event', event: 'play-failed', detail: { source: url, reason: err.message } });
        return null;
      });
      this.lastPlay = { url, audio };
    }
    this.enqueue('', this.lastPlay.audio, url);
  }

  /** The transcript's line for what was played (or cut off): the agent's words, or the event of a URL's audio. */
  private playedEntry(item: Spoken, extra: { interrupted?: true; latency?: TurnLatency }): TranscriptEntry {
    if (item.source === undefined) return { role: 'agent', text: item.text, ...extra };
    return { role: 'event', event: 'played', detail: { source: item.source, ...(extra.interrupted ? { interrupted: true } : {}) } };
  }

  private hasEndPhrase(text: string): boolean {
    const said = text.toLowerCase();
    return this.o.config.endCallPhrases.some((phrase) => phrase.trim() !== '' && said.includes(phrase.toLowerCase()));
  }

  private synthesise(text: string): Promise<Int16Array | null> {
    return this.o.speak(text).catch((err: Error) => {
      this.o.record({ role: 'event', event: 'tts-failed', detail: { message: err.message, text } });
      return null;
    });
  }

  private enqueue(text: string, audio: Promise<Int16Array | null>, source?: string): void {
    this.queue.push({ text, audio, ...(source === undefined ? {} : { source }) });
    this.clearSilence();
    if (!this.speaking) void this.playNext();
  }

  /** Plays the queue in order; each sentence is synthesised while the one before it plays. */
  private async playNext(): Promise<void> {
    if (this.speaking) return;
    this.speaking = true;
    while (this.queue.length && !this.ending) {
      const next = this.queue[0];
      const ttsStarted = performance.now();
      const pcm = await next.audio;
      if (this.queue[0] !== next) return; // barge-in dropped the queue while this was being synthesised
      this.queue.shift();
      if (!pcm || this.ending) continue;
      this.playing = next;
      const turn = this.pendingTurn;
      let latency: TurnLatency | undefined;
      if (turn) {
        const now = performance.now();
        latency = {
          sttMs: turn.sttMs,
          brainMs: Math.round((turn.firstSayAt ?? now) - turn.promptedAt),
          ttsMs: Math.round(now - Math.max(ttsStarted, turn.firstSayAt ?? ttsStarted)),
          totalMs: Math.round(now - turn.endedAt),
        };
        this.pendingTurn = null;
      }
      const played = this.o.media.played();
      // A file's audio may be queued again (a loop, the same source twice): copied to the worker, not moved.
      this.o.media.play(pcm, next.source === undefined ? {} : { transfer: false });
      const end = await played;
      if (end === 'interrupted' || this.playing !== next) return;
      this.o.record(this.playedEntry(next, latency ? { latency } : {}));
      if (next.text) this.heard.push(next.text);
      this.playing = null;
    }
    this.speaking = false;
    this.heard = [];
    this.wakeQuiet();
    if (this.endWhenQuiet) return this.finish(this.endWhenQuiet);
    if (!this.ending) this.armSilence();
  }

  private endAfterSpeaking(end: ConversationEnd): void {
    this.endWhenQuiet ??= end;
    if (!this.speaking && this.queue.length === 0) this.finish(end);
  }

  /** The brain cannot go on: the apology is spoken, then the agent's failure rule applies (the session reads it). */
  private async onFailure(code: string, message: string): Promise<void> {
    if (this.ending || this.endWhenQuiet) return;
    this.o.record({ role: 'event', event: 'failure', detail: { code, message } });
    // The sentence playing ends; what was queued after it is dropped for the apology.
    this.queue.length = 0;
    this.endWhenQuiet = { reason: 'failed', code, message };
    this.enqueue(this.o.config.failure.message, this.synthesise(this.o.config.failure.message));
  }

  private armSilence(): void {
    this.clearSilence();
    if (this.ending || this.recognising > 0) return;
    const seconds = this.o.config.silenceTimeoutSeconds;
    if (!(seconds > 0)) return;
    this.silenceTimer = setTimeout(() => {
      if (!this.speaking && this.recognising === 0) this.finish({ reason: 'silence', detail: { seconds } });
    }, seconds * 1000);
  }

  private clearSilence(): void {
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.silenceTimer = null;
  }

  private finish(end: ConversationEnd): void {
    if (this.ending) return;
    this.ending = end;
    this.clearSilence();
    this.queue.length = 0;
    this.wakeQuiet();
    void this.o.brain.close().catch(() => undefined);
    this.resolveDone(end);
  }
}
