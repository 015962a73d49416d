/**
 * The main thread's side of one session hosted in a media worker: commands go over, events come back. Two handles
 * of one worker can be bridged (bridge(), unbridge()): each far end then hears the other.
 */
import { EventEmitter } from 'node:events';
import { dtmfEventCode } from './dtmf.js';
import type { DigitSource, MediaSessionStats, Negotiated, PlaybackEnd, RemoteAddress } from './media-session.js';
import type { UnbridgeReason, WorkerRequest } from './media-worker.js';
import type { SpeechRun } from './speech-profiler.js';
import type { UtteranceInfo } from '../audio/utterance-segmenter.js';

export interface MediaHandleEvents {
  digit: [digit: string, source: DigitSource];
  /** The queue drained ('finished') or was dropped by interrupt() ('interrupted'). */
  playbackDone: [end: PlaybackEnd];
  rtpTimeout: [];
  /** The far end's speech in its first audio (OpenOptions.speechProfile). */
  speechProfile: [runs: SpeechRun[]];
  /** The far end has been speaking for `startMs`; its speech began `atMs` into its audio (OpenOptions.listen). */
  speechStart: [atMs: number];
  /** An utterance of the far end: its 8 kHz audio (from the pre-roll to the end of speech) and timings (OpenOptions.listen). */
  utterance: [pcm: Int16Array, info: UtteranceInfo];
  /** Bridged to `peer` (on both handles, before bridge() resolves). */
  bridged: [peer: MediaHandle];
  /** The bridge ended (on both handles); the session goes on alone. */
  unbridged: [reason: UnbridgeReason];
}

export interface MediaStopResult {
  stats: MediaSessionStats;
  /** The received audio (8 kHz), when the session was opened with `record`. */
  recording?: Int16Array;
}

/** How a handle reaches its worker (the engine's side). */
export interface HandleTransport {
  post(request: WorkerRequest, transfer?: ArrayBuffer[]): void;
  stop(id: number): Promise<MediaStopResult>;
  bridge(id: number, other: MediaHandle): Promise<void>;
  unbridge(id: number): Promise<void>;
}

export interface PlayOptions {
  /** Move the samples' buffer to the worker instead of copying it (default true; the caller's array is then empty). */
  transfer?: boolean;
}

export class MediaHandle extends EventEmitter<MediaHandleEvents> {
  private stopping: Promise<MediaStopResult> | undefined;
  private peer: MediaHandle | undefined;

  /** Whether the session was opened with `listen` (voice activity detection). */
  readonly listens: boolean;

  constructor(readonly id: number, readonly localPort: number, private readonly transport: HandleTransport, options: { listens?: boolean } = {}) {
    super();
    this.listens = options.listens ?? false;
    this.on('bridged', (peer) => (this.peer = peer));
    this.on('unbridged', () => (this.peer = undefined));
  }

  /** The handle this session is bridged to, if any. */
  get bridgedWith(): MediaHandle | undefined {
    return this.peer;
  }

  /** Where to send RTP (RTCP goes to port + 1), and the codec and event payload type the SDP answer chose. */
  setRemote(remote: RemoteAddress, negotiated?: Negotiated): void {
    this.transport.post({ op: 'remote', id: this.id, remote, negotiated });
  }

  /**
   * Queues 8 kHz audio; `playbackDone` fires when the queue has drained. The buffer is transferred when the
   * array owns all of it (not a view into a larger or shared one), so the caller must not use it afterwards.
   */
  play(pcm: Int16Array, options: PlayOptions = {}): void {
    if (this.stopping) return;
    const buffer = pcm.buffer;
    const movable = (options.transfer ?? true) && buffer instanceof ArrayBuffer && pcm.byteOffset === 0 && pcm.byteLength === buffer.byteLength;
    this.transport.post({ op: 'play', id: this.id, pcm }, movable ? [buffer] : undefined);
  }

  /** Resolves on the next `playbackDone`: how the playback ended. */
  played(): Promise<PlaybackEnd> {
    return new Promise((resolve) => this.once('playbackDone', resolve));
  }

  /**
   * Barge-in: drops all queued audio at once; `playbackDone` follows with 'interrupted' (so played() resolves)
   * when anything was queued. Queued digits still go out.
   */
  interrupt(): void {
    if (this.stopping) return;
    this.transport.post({ op: 'interrupt', id: this.id });
  }

  /**
   * Pauses (false) or resumes (true) utterance detection; pausing drops an utterance in progress without an event.
   * Only for a session opened with `listen`.
   */
  listening(on: boolean): void {
    if (!this.listens) throw new Error('listening(): the session was opened without `listen`');
    if (this.stopping) return;
    this.transport.post({ op: 'listen', id: this.id, on });
  }

  /** Sends keys (0-9 * # A-D) as RFC 4733 events. */
  sendDigits(digits: string): void {
    for (const digit of digits) if (dtmfEventCode(digit) < 0) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
    if (this.stopping) return;
    this.transport.post({ op: 'digits', id: this.id, digits });
  }

  /**
   * Bridges this session and `other` (opened with `near: this`, or this with `near: other`: one worker hosts both).
   * Each far end then hears the other's audio frame by frame on its own stream (same SSRC, sequence and timestamp
   * clock as before; payload copied for the same codec, PCMU and PCMA transcoded), silence while the other sends
   * none; keys received as RFC 4733 events are reported here as `digit` as before and sent on to the other far end
   * as events of its payload type. Playback in progress on either stops ('interrupted'); play() while bridged is
   * mixed over the bridged audio. Ends with unbridge(), or when either session stops or times out (`unbridged`).
   * Rejects when either is stopped, the two are in different workers, or either is bridged to a third.
   */
  bridge(other: MediaHandle): Promise<void> {
    if (other === this) return Promise.reject(new Error('bridge(): a session cannot be bridged to itself'));
    if (this.stopping || other.stopping) return Promise.reject(new Error('bridge(): the session is stopped'));
    return this.transport.bridge(this.id, other);
  }

  /** Ends this session's bridge (`unbridged` 'requested' on both handles first); nothing when there is none. */
  unbridge(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return this.transport.unbridge(this.id);
  }

  /** Closes the session: its final stats and recording. Idempotent. */
  stop(): Promise<MediaStopResult> {
    this.stopping ??= this.transport.stop(this.id);
    return this.stopping;
  }
}
