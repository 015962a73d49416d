/**
 * Bounds the scrypt password checks of the redirect listener. scrypt runs on libuv's threadpool (4 threads by
 * default), which fs and dns share: a flood of password posts would otherwise queue there and stall every file and
 * name lookup of the daemon. At most `atOnce` checks run; up to `queued` more wait their turn; beyond that `run`
 * answers null at once (the caller refuses with 429) instead of growing an unbounded queue.
 */
export class PasswordChecks {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly atOnce: number,
    private readonly queued: number,
  ) {}

  /** Runs `check` within the bound; null (and `check` never called) when the queue is full. */
  async run<T>(check: () => Promise<T>): Promise<T | null> {
    if (this.running >= this.atOnce) {
      if (this.waiting.length >= this.queued) return null;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    try {
      return await check();
    } finally {
      // The slot passes straight to the next waiter (running stays counted), else it is freed.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Checks running and waiting now. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}
