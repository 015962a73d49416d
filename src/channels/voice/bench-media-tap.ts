/**
 * The voice bench's view of media sessions' final stats. A call session stops its media handle at the end and drops
 * the `{stats}` it gets back (call-session.ts cleanup), and the trunk simulator keeps only its recording, so the bench
 * wraps MediaHandle.prototype.stop in its own processes (never in the product) and keeps each session's stats, by the
 * local port range it was opened in: Ferry's and the simulator's ranges differ, so one process can host both.
 */
import { MediaHandle, type MediaStopResult } from '../../rtp/media-handle.js';
import type { MediaSessionStats } from '../../rtp/media-session.js';
import type { PortRange } from '../../rtp/port-pool.js';

/** At most this many sessions' stats are held per range (a bench step is ≤ 1,000 calls). */
const MAX_KEPT = 5000;

export class MediaStatsTap {
  private static installed = false;
  private static readonly taps: MediaStatsTap[] = [];
  private stats: MediaSessionStats[] = [];

  private constructor(private readonly range: PortRange) {}

  /** Keeps the final stats of every session whose local port lies in `range`, from now on. */
  static forRange(range: PortRange): MediaStatsTap {
    MediaStatsTap.install();
    const tap = new MediaStatsTap(range);
    MediaStatsTap.taps.push(tap);
    return tap;
  }

  private static install(): void {
    if (MediaStatsTap.installed) return;
    MediaStatsTap.installed = true;
    const original = MediaHandle.prototype.stop;
    const seen = new WeakSet<MediaHandle>();
    MediaHandle.prototype.stop = function (this: MediaHandle): Promise<MediaStopResult> {
      const result = original.call(this);
      if (!seen.has(this)) {
        seen.add(this);
        result.then((r) => MediaStatsTap.keep(r.stats), () => undefined);
      }
      return result;
    };
  }

  private static keep(stats: MediaSessionStats): void {
    for (const tap of MediaStatsTap.taps) {
      if (stats.localPort >= tap.range.min && stats.localPort <= tap.range.max && tap.stats.length < MAX_KEPT) tap.stats.push(stats);
    }
  }

  get count(): number {
    return this.stats.length;
  }

  /** The stats kept since the last take, and forgets them. */
  take(): MediaSessionStats[] {
    const out = this.stats;
    this.stats = [];
    return out;
  }
}
