/** A loop's pause between polls that wake() cuts short (new work arrived). One pause at a time. */
export class WakeableSleep {
  private wakeUp: (() => void) | null = null;

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wakeUp = done;
    }).finally(() => (this.wakeUp = null));
  }

  wake(): void {
    this.wakeUp?.();
  }
}
