/** RFC 3261 17.1.1.1 timer bases, in ms. Tests shrink t1 to run fast; every other timer derives from these. */
export interface SipTimerConfig {
  t1: number;
  t2: number;
  t4: number;
}

export const DEFAULT_TIMERS: Readonly<SipTimerConfig> = { t1: 500, t2: 4000, t4: 5000 };

/** Named timeouts owned by one object, all cleared together when it ends (so nothing dangles after close). */
export class TimerSet {
  private readonly handles = new Map<string, NodeJS.Timeout>();

  set(name: string, ms: number, fn: () => void): void {
    this.clear(name);
    this.handles.set(name, setTimeout(() => {
      this.handles.delete(name);
      fn();
    }, ms));
  }

  clear(name: string): void {
    const h = this.handles.get(name);
    if (h !== undefined) {
      clearTimeout(h);
      this.handles.delete(name);
    }
  }

  clearAll(): void {
    for (const h of this.handles.values()) clearTimeout(h);
    this.handles.clear();
  }

  get size(): number {
    return this.handles.size;
  }
}
