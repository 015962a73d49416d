/**
 * One drift-free 20 ms clock for many sessions: tick k is due at start + k·20 ms (absolute, from hrtime), so
 * timer lateness never accumulates. setTimeout wakes it shortly before a tick is due and setImmediate turns
 * over the last stretch (the `spinMicros` window), as timers alone are only good to ~1 ms.
 */

export interface FrameSchedulerOptions {
  frameMs?: number;
  /** Before each tick, wait this long on setImmediate instead of a timer (default 1500 µs; 0: timers only). */
  spinMicros?: number;
}

/** Called with tick k's due time (hrtime ns) and k. */
export type TickHandler = (dueNs: bigint, frame: number) => void;

export class FrameScheduler {
  private readonly frameNs: bigint;
  private readonly spinMs: number;
  private startNs = 0n;
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private running = false;
  /** Ticks dropped because the loop woke more than a frame late (never sent in a burst). */
  skippedTicks = 0;

  constructor(private readonly onTick: TickHandler, options: FrameSchedulerOptions = {}) {
    this.frameNs = BigInt(Math.round((options.frameMs ?? 20) * 1e6));
    this.spinMs = (options.spinMicros ?? 1500) / 1000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.startNs = process.hrtime.bigint() + this.frameNs;
    this.frame = 0;
    this.wait();
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private readonly wake = (): void => {
    this.timer = undefined;
    this.immediate = undefined;
    if (!this.running) return;
    const now = process.hrtime.bigint();
    let due = this.startNs + BigInt(this.frame) * this.frameNs;
    if (now >= due) {
      // More than one whole frame late: skip to the frame before the latest, so at most two go out back to back.
      const behind = Number((now - due) / this.frameNs);
      if (behind >= 2) {
        this.frame += behind - 1;
        this.skippedTicks += behind - 1;
        due = this.startNs + BigInt(this.frame) * this.frameNs;
      }
      this.onTick(due, this.frame);
      this.frame++;
    }
    this.wait();
  };

  private wait(): void {
    if (!this.running) return;
    const due = this.startNs + BigInt(this.frame) * this.frameNs;
    const aheadMs = Number(due - process.hrtime.bigint()) / 1e6;
    if (aheadMs <= 0) this.immediate = setImmediate(this.wake);
    else if (aheadMs <= this.spinMs) this.immediate = setImmediate(this.wake);
    else this.timer = setTimeout(this.wake, Math.max(1, Math.floor(aheadMs - this.spinMs)));
  }
}
