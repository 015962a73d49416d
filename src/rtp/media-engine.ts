/**
 * The media plane, off the main event loop: worker threads each hosting many RTP sessions on their own 20 ms
 * clock. The main thread opens sessions and gets MediaHandles; audio, digits and stats cross by message.
 *
 * Bridging (MediaHandle.bridge): two sessions of one worker forward each other's received audio and RFC 4733 keys
 * to their far ends, on that worker's clock. A session to be bridged with an existing one is opened next to it:
 * `open({ near: handle })` puts it in that handle's worker (otherwise a session goes to the least loaded worker,
 * and bridge() refuses a pair in two workers).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { MediaHandle, type MediaStopResult } from './media-handle.js';
import type { ListenOptions, MediaSessionOptions, RemoteAddress } from './media-session.js';
import type { MediaWorkerData, WorkerReply, WorkerRequest } from './media-worker.js';
import { PortPool, type PortRange } from './port-pool.js';
import type { G711Codec } from './g711.js';

export interface MediaEngineOptions {
  /** Worker threads (default 1); the port range is split between them. */
  workers?: number;
  portRange: PortRange;
  /** Address the sessions bind (default 127.0.0.1). */
  host?: string;
  /** Default for open()'s rtpTimeoutMs (default 0: off). */
  rtpTimeoutMs?: number;
  /** The scheduler's setImmediate window before each tick (µs; default 1500). */
  spinMicros?: number;
  /**
   * Load the VAD (WASM) in each worker at start, not when the first session with `listen` opens. Either way the
   * load is asynchronous and the workers' clocks keep ticking.
   */
  preloadVad?: boolean;
}

export interface OpenOptions {
  codec: G711Codec;
  /** RFC 4733 payload type as negotiated (default 101). */
  dtmfPayloadType?: number;
  remote?: RemoteAddress;
  /** Latch the remote to the source of the first packets (symmetric RTP). */
  symmetric?: boolean;
  record?: { maxSeconds: number };
  inbandDtmf?: boolean;
  rtpTimeoutMs?: number;
  rtcpIntervalMs?: number;
  digitMs?: number;
  /** Send silence between prompts (MediaSessionOptions.continuous). */
  continuous?: boolean;
  /** Profile the far end's first speech (MediaSessionOptions.speechProfile). */
  speechProfile?: { windowMs: number };
  /** Voice activity detection on the far end's audio: `speechStart` and `utterance` events (MediaSessionOptions.listen). */
  listen?: ListenOptions;
  /** Open in the worker of this (open) session, so the two can be bridged (MediaHandle.bridge). */
  near?: MediaHandle;
}

/** A request the worker answers with `done`; the link numbers it. */
type SequencedRequest = Extract<WorkerRequest, { seq: number }>;
type Unsequenced<R> = R extends { seq: number } ? Omit<R, 'seq'> : never;

interface Pending {
  resolve: (value: never) => void;
  reject: (err: Error) => void;
}

/**
 * The worker script next to this module: media-worker.js in dist/ (production). When this module itself runs from
 * source under a TypeScript loader, media-worker.ts: a Worker inherits the parent's execArgv, so a hook given with
 * --import (the tests' ts-register.mjs) loads it as it loaded us. tsx's CLI is the exception: its --import hook
 * registers on the main thread only, so under tsx the worker starts from a bootstrap that registers tsx's API itself.
 */
function workerEntry(): { script: URL | string; eval: boolean } {
  const compiled = new URL('./media-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return { script: compiled, eval: false };
  const source = new URL('./media-worker.ts', import.meta.url);
  // tsx as a path (its CLI) or as the bare specifier of `node --import tsx` (how `npm run bench` starts a scenario).
  if (!process.execArgv.some((arg) => /[\\/]tsx[\\/]/.test(arg) || arg === 'tsx' || arg === '--import=tsx')) return { script: source, eval: false };
  // tsx resolved from here (the package), not from the worker's cwd.
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source.href)}); })`;
  return { script: bootstrap, eval: true };
}

/**
 * The worker's node options: the parent's (undefined = inherited as parsed, which also carries process-wide flags a
 * worker may not be given explicitly), less --input-type, which a worker started from a file refuses
 * (a parent run as `node --input-type=module -e …`).
 */
function workerExecArgv(): string[] | undefined {
  const argv = process.execArgv;
  if (!argv.some((a) => a.startsWith('--input-type'))) return undefined;
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--input-type') i++;
    else if (!argv[i].startsWith('--input-type=')) kept.push(argv[i]);
  }
  return kept;
}

/** One worker thread and the sessions it hosts. */
class WorkerLink {
  readonly handles = new Map<number, MediaHandle>();
  private readonly opening = new Map<number, Pending>();
  private readonly stopping = new Map<number, Pending>();
  /** Bridge requests, by their `seq`. */
  private readonly requests = new Map<number, Pending>();
  private nextSeq = 1;
  /** Sessions the worker stopped without being asked (engine.close()): kept for a later handle.stop(). */
  private readonly unclaimed = new Map<number, MediaStopResult>();
  private closing: Pending | undefined;
  private closed: Promise<void> | undefined;
  private dead: Error | undefined;

  constructor(readonly worker: Worker) {
    worker.on('message', (reply: WorkerReply) => this.onReply(reply));
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', (code) => {
      if (this.closing) {
        this.closing.resolve(undefined as never);
        this.rejectRequests(new Error('media engine is closed'));
      } else this.fail(new Error(`media worker exited (code ${code})`));
    });
  }

  get load(): number {
    return this.handles.size + this.opening.size;
  }

  post(request: WorkerRequest, transfer?: ArrayBuffer[]): void {
    if (this.dead) return;
    this.worker.postMessage(request, transfer);
  }

  open(id: number, options: MediaSessionOptions): Promise<number> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<number>((resolve, reject) => {
      this.opening.set(id, { resolve: resolve as (v: never) => void, reject });
      this.post({ op: 'open', id, options });
    });
  }

  stop(id: number): Promise<MediaStopResult> {
    const result = this.unclaimed.get(id);
    if (result) {
      this.unclaimed.delete(id);
      return Promise.resolve(result);
    }
    if (this.dead) return Promise.reject(this.dead);
    if (this.closed) {
      // The worker stops every session on close: the result arrives as an unclaimed one.
      return this.closed.then(() => {
        const late = this.unclaimed.get(id);
        this.unclaimed.delete(id);
        return late ?? Promise.reject(new Error('media engine is closed'));
      });
    }
    return new Promise<MediaStopResult>((resolve, reject) => {
      this.stopping.set(id, { resolve: resolve as (v: never) => void, reject });
      this.post({ op: 'stop', id });
    });
  }

  /** Sends a request the worker answers with `done`: resolves then, or rejects with the worker's reason. */
  request(request: Unsequenced<SequencedRequest>): Promise<void> {
    if (this.dead) return Promise.reject(this.dead);
    if (this.closed) return Promise.reject(new Error('media engine is closed'));
    const seq = this.nextSeq++;
    return new Promise<void>((resolve, reject) => {
      this.requests.set(seq, { resolve: resolve as (v: never) => void, reject });
      this.post({ ...request, seq } as SequencedRequest);
    });
  }

  close(): Promise<void> {
    if (this.dead) return Promise.resolve();
    this.closed ??= new Promise<void>((resolve, reject) => {
      this.closing = { resolve: resolve as (v: never) => void, reject };
      this.post({ op: 'close' });
    });
    return this.closed;
  }

  private onReply(reply: WorkerReply): void {
    switch (reply.kind) {
      case 'opened':
        this.settle(this.opening, reply.id, reply.localPort);
        return;
      case 'failed': {
        const pending = this.opening.get(reply.id) ?? this.stopping.get(reply.id);
        this.opening.delete(reply.id);
        this.stopping.delete(reply.id);
        pending?.reject(new Error(reply.message));
        return;
      }
      case 'stopped': {
        this.handles.delete(reply.id);
        const result: MediaStopResult = { stats: reply.stats, recording: reply.recording };
        if (this.stopping.has(reply.id)) this.settle(this.stopping, reply.id, result);
        else this.unclaimed.set(reply.id, result);
        return;
      }
      case 'digit':
        this.handles.get(reply.id)?.emit('digit', reply.digit, reply.source);
        return;
      case 'playbackDone':
        this.handles.get(reply.id)?.emit('playbackDone', reply.end);
        return;
      case 'rtpTimeout':
        this.handles.get(reply.id)?.emit('rtpTimeout');
        return;
      case 'bridged': {
        const peer = this.handles.get(reply.peer);
        if (peer) this.handles.get(reply.id)?.emit('bridged', peer);
        return;
      }
      case 'unbridged':
        this.handles.get(reply.id)?.emit('unbridged', reply.reason);
        return;
      case 'done': {
        const pending = this.requests.get(reply.seq);
        this.requests.delete(reply.seq);
        if (reply.message === undefined) pending?.resolve(undefined as never);
        else pending?.reject(new Error(reply.message));
        return;
      }
      case 'speechProfile':
        this.handles.get(reply.id)?.emit('speechProfile', reply.runs);
        return;
      case 'speechStart':
        this.handles.get(reply.id)?.emit('speechStart', reply.atMs);
        return;
      case 'utterance':
        this.handles.get(reply.id)?.emit('utterance', reply.pcm, reply.info);
        return;
      case 'ready':
      case 'closed':
        return;
    }
  }

  private settle(map: Map<number, Pending>, id: number, value: unknown): void {
    const pending = map.get(id);
    map.delete(id);
    pending?.resolve(value as never);
  }

  private fail(err: Error): void {
    if (this.dead) return;
    this.dead = err;
    for (const pending of [...this.opening.values(), ...this.stopping.values()]) pending.reject(err);
    this.opening.clear();
    this.stopping.clear();
    this.rejectRequests(err);
    this.closing?.reject(err);
  }

  private rejectRequests(err: Error): void {
    for (const pending of this.requests.values()) pending.reject(err);
    this.requests.clear();
  }
}

export class MediaEngine {
  private nextId = 1;
  private closed = false;

  private constructor(private readonly links: WorkerLink[], private readonly options: MediaEngineOptions) {}

  /** Starts the workers; resolves when each is ready. */
  static async start(options: MediaEngineOptions): Promise<MediaEngine> {
    const count = Math.max(1, Math.floor(options.workers ?? 1));
    const ranges = PortPool.split(options.portRange, count);
    const entry = workerEntry();
    const workers: Worker[] = [];
    const started = await Promise.allSettled(
      ranges.map(async (portRange) => {
        const data: MediaWorkerData = { portRange, host: options.host ?? '127.0.0.1', spinMicros: options.spinMicros, preloadVad: options.preloadVad };
        const worker = new Worker(entry.script, { eval: entry.eval, workerData: data, name: 'ferry-media', execArgv: workerExecArgv() });
        workers.push(worker);
        await new Promise<void>((resolve, reject) => {
          const onMessage = (reply: WorkerReply): void => {
            if (reply.kind !== 'ready') return;
            worker.off('message', onMessage);
            worker.off('error', reject);
            resolve();
          };
          worker.on('message', onMessage);
          worker.once('error', reject);
        });
        return new WorkerLink(worker);
      }),
    );
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      // One worker could not start: end the others rather than leave them running.
      await Promise.all(workers.map((w) => w.terminate()));
      throw failed.reason;
    }
    const links = started.map((r) => (r as PromiseFulfilledResult<WorkerLink>).value);
    return new MediaEngine(links, options);
  }

  /** Opens a session on the least loaded worker, or on `near`'s: bound and ready when this resolves. */
  async open(options: OpenOptions): Promise<MediaHandle> {
    if (this.closed) throw new Error('media engine is closed');
    const { near, ...sessionOptions } = options;
    const link = near ? this.linkOf(near) : this.links.reduce((a, b) => (b.load < a.load ? b : a));
    if (!link) throw new Error('open(): `near` is not a session open in this engine');
    const id = this.nextId++;
    const localPort = await link.open(id, { rtpTimeoutMs: this.options.rtpTimeoutMs, ...sessionOptions });
    const handle = new MediaHandle(
      id,
      localPort,
      {
        post: (request, transfer) => link.post(request, transfer),
        stop: (sessionId) => link.stop(sessionId),
        bridge: (sessionId, other) =>
          link.handles.get(other.id) === other
            ? link.request({ op: 'bridge', id: sessionId, peer: other.id })
            : Promise.reject(new Error('bridge(): the sessions are not in the same media worker (open the second with `near`)')),
        unbridge: (sessionId) => link.request({ op: 'unbridge', id: sessionId }),
      },
      { listens: options.listen !== undefined },
    );
    link.handles.set(id, handle);
    return handle;
  }

  /** The worker link hosting `handle`, if it is open in this engine. */
  private linkOf(handle: MediaHandle): WorkerLink | undefined {
    return this.links.find((link) => link.handles.get(handle.id) === handle);
  }

  /** Sessions open now, over all workers. */
  get sessions(): number {
    return this.links.reduce((n, link) => n + link.handles.size, 0);
  }

  /** Stops every session and ends the workers. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.links.map((link) => link.close()));
  }
}
