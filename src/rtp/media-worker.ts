/**
 * The media plane's thread: hosts many MediaSessions and drives them all from one FrameScheduler, so audio
 * pacing never waits on the main event loop. Spoken to only by MediaEngine (the messages below). It also keeps
 * the bridges between its sessions (a bridge joins two sessions of one worker, never across threads).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { FrameScheduler } from './frame-scheduler.js';
import type { SpeechRun } from './speech-profiler.js';
import { MediaSession, type DigitSource, type MediaSessionOptions, type MediaSessionStats, type Negotiated, type PlaybackEnd, type RemoteAddress } from './media-session.js';
import { PortPool, type PortRange } from './port-pool.js';
import { preloadVad } from '../audio/vad.js';
import type { UtteranceInfo } from '../audio/utterance-segmenter.js';

export interface MediaWorkerData {
  portRange: PortRange;
  host: string;
  frameMs?: number;
  spinMicros?: number;
  /** Load the VAD's WASM module at start rather than at the first session that listens. */
  preloadVad?: boolean;
}

/**
 * Why a bridge ended, as the session on each side sees it: unbridge() was called on either handle ('requested'), this
 * session stopped or timed out, or the peer did ('peerStopped', 'peerRtpTimeout').
 */
export type UnbridgeReason = 'requested' | 'stopped' | 'rtpTimeout' | 'peerStopped' | 'peerRtpTimeout';

export type WorkerRequest =
  | { op: 'open'; id: number; options: MediaSessionOptions }
  | { op: 'remote'; id: number; remote: RemoteAddress; negotiated?: Negotiated }
  | { op: 'play'; id: number; pcm: Int16Array }
  | { op: 'digits'; id: number; digits: string }
  | { op: 'interrupt'; id: number }
  | { op: 'listen'; id: number; on: boolean }
  /** Requests answered by `done` with their `seq` (an error as `message`). */
  | { op: 'bridge'; id: number; peer: number; seq: number }
  | { op: 'unbridge'; id: number; seq: number }
  | { op: 'stop'; id: number }
  | { op: 'close' };

export type WorkerReply =
  | { kind: 'ready' }
  | { kind: 'opened'; id: number; localPort: number }
  | { kind: 'failed'; id: number; message: string }
  | { kind: 'digit'; id: number; digit: string; source: DigitSource }
  | { kind: 'playbackDone'; id: number; end: PlaybackEnd }
  | { kind: 'rtpTimeout'; id: number }
  | { kind: 'bridged'; id: number; peer: number }
  | { kind: 'unbridged'; id: number; reason: UnbridgeReason }
  | { kind: 'done'; seq: number; message?: string }
  | { kind: 'speechProfile'; id: number; runs: SpeechRun[] }
  | { kind: 'speechStart'; id: number; atMs: number }
  | { kind: 'utterance'; id: number; pcm: Int16Array; info: UtteranceInfo }
  | { kind: 'stopped'; id: number; stats: MediaSessionStats; recording?: Int16Array }
  | { kind: 'closed' };

/** Timeouts are looked at every this many ticks (0.5 s), not every 20 ms. */
const TIMEOUT_CHECK_TICKS = 25;

class MediaWorker {
  private readonly sessions = new Map<number, MediaSession>();
  private readonly pool: PortPool;
  private readonly scheduler: FrameScheduler;

  constructor(private readonly port: NonNullable<typeof parentPort>, private readonly data: MediaWorkerData) {
    this.pool = new PortPool(data.portRange);
    this.scheduler = new FrameScheduler(this.onTick, { frameMs: data.frameMs, spinMicros: data.spinMicros });
    port.on('message', (request: WorkerRequest) => {
      this.handle(request).catch((err: unknown) => {
        if ('id' in request) this.reply({ kind: 'failed', id: request.id, message: err instanceof Error ? err.message : String(err) });
      });
    });
    // Loading is asynchronous (the clock keeps ticking); a failure shows when a session that listens opens.
    if (data.preloadVad) preloadVad().catch(() => undefined);
    this.reply({ kind: 'ready' });
  }

  private reply(message: WorkerReply, transfer?: ArrayBuffer[]): void {
    this.port.postMessage(message, transfer);
  }

  private readonly onTick = (dueNs: bigint, frame: number): void => {
    for (const session of this.sessions.values()) session.tick(dueNs);
    if (frame % TIMEOUT_CHECK_TICKS === 0) {
      const now = process.hrtime.bigint();
      for (const session of this.sessions.values()) session.checkTimeout(now);
    }
  };

  private async handle(request: WorkerRequest): Promise<void> {
    switch (request.op) {
      case 'open':
        return this.open(request.id, request.options);
      case 'remote':
        this.sessions.get(request.id)?.setRemote(request.remote, request.negotiated);
        return;
      case 'play':
        this.sessions.get(request.id)?.play(request.pcm);
        return;
      case 'digits':
        this.sessions.get(request.id)?.sendDigits(request.digits);
        return;
      case 'interrupt':
        this.sessions.get(request.id)?.interrupt();
        return;
      case 'listen':
        this.sessions.get(request.id)?.setListening(request.on);
        return;
      case 'bridge':
        this.reply({ kind: 'done', seq: request.seq, message: this.bridge(request.id, request.peer) });
        return;
      case 'unbridge':
        this.unbridge(request.id, 'requested', 'requested');
        this.reply({ kind: 'done', seq: request.seq });
        return;
      case 'stop':
        return this.stop(request.id);
      case 'close':
        for (const id of [...this.sessions.keys()]) await this.stop(id);
        this.scheduler.stop();
        this.reply({ kind: 'closed' });
        this.port.close();
        return;
    }
  }

  private async open(id: number, options: MediaSessionOptions): Promise<void> {
    // A port another process holds fails to bind: move on to the next pair, at most once round the pool.
    let lastError: unknown = new Error(`no free RTP port in ${this.data.portRange.min}-${this.data.portRange.max}`);
    for (let attempt = 0; attempt < this.pool.size; attempt++) {
      const localPort = this.pool.acquire();
      if (localPort === undefined) break;
      try {
        const session = await MediaSession.open(localPort, { ...options, host: this.data.host });
        this.sessions.set(id, session);
        session.on('digit', (digit, source) => this.reply({ kind: 'digit', id, digit, source }));
        session.on('playbackDone', (end) => this.reply({ kind: 'playbackDone', id, end }));
        session.on('rtpTimeout', () => {
          this.reply({ kind: 'rtpTimeout', id });
          // The leg whose far end went quiet leaves the bridge; the other goes on alone.
          this.unbridge(id, 'rtpTimeout', 'peerRtpTimeout');
        });
        session.on('speechProfile', (runs) => this.reply({ kind: 'speechProfile', id, runs }));
        session.on('speechStart', (atMs) => this.reply({ kind: 'speechStart', id, atMs }));
        // The segmenter's copy owns its buffer: moved, not copied.
        session.on('utterance', (pcm, info) => this.reply({ kind: 'utterance', id, pcm, info }, [pcm.buffer as ArrayBuffer]));
        session.on('error', () => undefined); // a send to a closed port (ICMP) is the peer's problem, seen as loss
        if (this.sessions.size === 1) this.scheduler.start();
        this.reply({ kind: 'opened', id, localPort });
        return;
      } catch (err) {
        this.pool.release(localPort);
        lastError = err;
      }
    }
    throw lastError;
  }

  /** Bridges two of this worker's sessions; the reason it cannot, or undefined. Bridging a pair again changes nothing. */
  private bridge(id: number, peerId: number): string | undefined {
    const session = this.sessions.get(id);
    const peer = this.sessions.get(peerId);
    if (!session || !peer) return 'bridge(): both sessions must be open, in the same media worker';
    if (session === peer) return 'bridge(): a session cannot be bridged to itself';
    if (session.bridgedWith === peer) return undefined;
    if (session.bridgedWith || peer.bridgedWith) return 'bridge(): a session is already bridged to another: unbridge() it first';
    session.bridgeWith(peer);
    peer.bridgeWith(session);
    this.reply({ kind: 'bridged', id, peer: peerId });
    this.reply({ kind: 'bridged', id: peerId, peer: id });
    return undefined;
  }

  /** Ends the bridge of session `id`, if it has one: `own` is why for it, `forPeer` why for the other side. */
  private unbridge(id: number, own: UnbridgeReason, forPeer: UnbridgeReason): void {
    const session = this.sessions.get(id);
    const peer = session?.bridgedWith;
    if (!session || !peer) return;
    session.bridgeWith(null);
    peer.bridgeWith(null);
    this.reply({ kind: 'unbridged', id, reason: own });
    for (const [peerId, s] of this.sessions) if (s === peer) this.reply({ kind: 'unbridged', id: peerId, reason: forPeer });
  }

  private async stop(id: number): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) return;
    this.unbridge(id, 'stopped', 'peerStopped');
    this.sessions.delete(id);
    if (this.sessions.size === 0) this.scheduler.stop();
    const stats = await session.close();
    this.pool.release(session.localPort);
    const recording = session.recorded();
    this.reply({ kind: 'stopped', id, stats, recording }, recording ? [recording.buffer as ArrayBuffer] : undefined);
  }
}

if (!isMainThread && parentPort) new MediaWorker(parentPort, workerData as MediaWorkerData);
