import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface SpeechCacheOptions {
  /** The folder of cached audio; created if missing. Several processes may share it. */
  dir: string;
  /** Bound on the folder's total size; the least recently used files go first. */
  maxBytes: number;
  /** Bound on the in-memory front. Default 4 MB (≈ 4 minutes of 8 kHz speech). */
  memoryBytes?: number;
  /** Errors of the disk layer: the cache is best effort, so they never fail a request. Default: ignored. */
  onError?: (err: unknown) => void;
  /** Clock for the last-use stamps (ms); tests set it. */
  now?: () => number;
}

export interface SpeechCacheKey {
  engine: string;
  voice: string;
  rate: number | undefined;
  text: string;
}

/** Every this many own writes, the folder is measured again to count what other processes wrote. */
const RESCAN_EVERY_WRITES = 64;
/** Eviction goes below the bound, so the next few writes do not each trigger it. */
const EVICT_TO_SHARE = 0.9;
/** A temp file this old was left by a process that died mid-write. */
const STALE_TEMP_MS = 10 * 60_000;
const SUFFIX = '.pcm';
const TEMP_SUFFIX = '.tmp';

/**
 * Synthesized audio (mono 16-bit PCM at 8 kHz, stored raw, little-endian as in memory) per (engine, voice, rate,
 * text), keyed by the SHA-256 of that tuple. On disk, files are written to a temp name and renamed into place, so a
 * reader (this process or another sharing the folder) sees a whole file or none. A file's mtime is its last use:
 * set on write and on every hit, and eviction removes the oldest first. A small in-memory LRU sits in front, and
 * concurrent requests for one key share one synthesis (within a process; two processes may both synthesize a key,
 * and the second rename just replaces the first's identical file).
 */
export class SpeechCache {
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly memoryBytes: number;
  private readonly onError: (err: unknown) => void;
  private readonly now: () => number;
  private readonly memory = new Map<string, Int16Array>();
  private memoryUsed = 0;
  private readonly inFlight = new Map<string, Promise<Int16Array>>();
  private diskBytes: number | undefined;
  private writesSinceScan = 0;
  private eviction: Promise<void> | undefined;
  private ready: Promise<unknown> | undefined;

  constructor(options: SpeechCacheOptions) {
    this.dir = options.dir;
    this.maxBytes = options.maxBytes;
    this.memoryBytes = options.memoryBytes ?? 4 * 1024 * 1024;
    this.onError = options.onError ?? (() => undefined);
    this.now = options.now ?? Date.now;
  }

  static hash(key: SpeechCacheKey): string {
    return createHash('sha256')
      .update(JSON.stringify([key.engine, key.voice, key.rate ?? null, key.text]))
      .digest('hex');
  }

  /** The cached audio for `key`, or what `synthesize` makes (once, however many ask at the same time). */
  async get(key: SpeechCacheKey, synthesize: () => Promise<Int16Array>): Promise<Int16Array> {
    const hash = SpeechCache.hash(key);
    const remembered = this.memory.get(hash);
    if (remembered) {
      this.memory.delete(hash);
      this.memory.set(hash, remembered);
      return remembered.slice();
    }
    let flight = this.inFlight.get(hash);
    if (!flight) {
      flight = this.load(hash, synthesize).finally(() => this.inFlight.delete(hash));
      this.inFlight.set(hash, flight);
    }
    // A copy each: callers may change theirs without touching the cache.
    return (await flight).slice();
  }

  private async load(hash: string, synthesize: () => Promise<Int16Array>): Promise<Int16Array> {
    const stored = await this.readDisk(hash);
    if (stored) {
      this.remember(hash, stored);
      return stored;
    }
    const pcm = (await synthesize()).slice();
    this.remember(hash, pcm);
    await this.writeDisk(hash, pcm);
    return pcm;
  }

  private remember(hash: string, pcm: Int16Array): void {
    if (pcm.byteLength > this.memoryBytes) return;
    this.memory.set(hash, pcm);
    this.memoryUsed += pcm.byteLength;
    for (const [oldest, audio] of this.memory) {
      if (this.memoryUsed <= this.memoryBytes) break;
      this.memory.delete(oldest);
      this.memoryUsed -= audio.byteLength;
    }
  }

  private async readDisk(hash: string): Promise<Int16Array | undefined> {
    const path = join(this.dir, hash + SUFFIX);
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.onError(err);
      return undefined;
    }
    if (bytes.length % 2 !== 0 || bytes.length > this.maxBytes) {
      // Not a file this cache wrote whole: drop it and synthesize again.
      await unlink(path).catch(() => undefined);
      return undefined;
    }
    await this.touch(path);
    const pcm = new Int16Array(bytes.length / 2);
    new Uint8Array(pcm.buffer).set(bytes);
    return pcm;
  }

  private async writeDisk(hash: string, pcm: Int16Array): Promise<void> {
    if (pcm.byteLength > this.maxBytes) return;
    const path = join(this.dir, hash + SUFFIX);
    const temp = join(this.dir, `.${hash}.${process.pid}.${randomUUID().slice(0, 8)}${TEMP_SUFFIX}`);
    try {
      this.ready ??= mkdir(this.dir, { recursive: true });
      await this.ready;
      this.diskBytes ??= await this.measure();
      await writeFile(temp, new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength), { flag: 'wx' });
      await rename(temp, path);
      await this.touch(path);
    } catch (err) {
      this.ready = undefined;
      await unlink(temp).catch(() => undefined);
      this.onError(err);
      return;
    }
    this.diskBytes = (this.diskBytes ?? 0) + pcm.byteLength;
    if (this.diskBytes > this.maxBytes || ++this.writesSinceScan >= RESCAN_EVERY_WRITES) await this.evict();
  }

  private async touch(path: string): Promise<void> {
    const seconds = this.now() / 1000;
    // ENOENT: another process evicted it meanwhile, which is fine.
    await utimes(path, seconds, seconds).catch(() => undefined);
  }

  /** Total size of the folder's audio (before this process's first write, to learn what is already there). */
  private async measure(): Promise<number> {
    return (await this.listFiles()).reduce((sum, file) => sum + file.size, 0);
  }

  /** One eviction at a time; a caller arriving meanwhile waits for it. */
  private evict(): Promise<void> {
    this.eviction ??= this.evictOldest()
      .catch((err: unknown) => this.onError(err))
      .finally(() => (this.eviction = undefined));
    return this.eviction;
  }

  private async evictOldest(): Promise<void> {
    const files = await this.listFiles();
    let total = files.reduce((sum, file) => sum + file.size, 0);
    if (total > this.maxBytes) {
      files.sort((a, b) => a.lastUsed - b.lastUsed);
      const target = this.maxBytes * EVICT_TO_SHARE;
      for (const file of files) {
        if (total <= target) break;
        await unlink(join(this.dir, file.name)).catch(() => undefined);
        total -= file.size;
      }
    }
    this.diskBytes = total;
    this.writesSinceScan = 0;
  }

  /** The folder's audio files; stale temp files found on the way are removed. */
  private async listFiles(): Promise<Array<{ name: string; size: number; lastUsed: number }>> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const files: Array<{ name: string; size: number; lastUsed: number }> = [];
    for (const name of names) {
      const isAudio = name.endsWith(SUFFIX);
      if (!isAudio && !name.endsWith(TEMP_SUFFIX)) continue;
      const info = await stat(join(this.dir, name)).catch(() => undefined);
      if (!info) continue;
      if (isAudio) files.push({ name, size: info.size, lastUsed: info.mtimeMs });
      else if (Date.now() - info.mtimeMs > STALE_TEMP_MS) await unlink(join(this.dir, name)).catch(() => undefined);
    }
    return files;
  }
}
