/**
 * Requests in flight per target (a webhook endpoint, an account), capped, on one instance. Whoever sends to a target
 * takes one of its slots first and frees it when the target has answered; several senders sharing one TargetSlots
 * (webhooks' event stream and retry set) hold the cap together. A freed slot goes straight to the target's oldest
 * waiter, if any.
 */
export class TargetSlots {
  private readonly inflight = new Map<string, number>();
  private readonly waiters = new Map<string, (() => void)[]>();

  constructor(private readonly cap: number) {}

  /** Requests in flight to one target at most. */
  capOf(): number {
    return this.cap;
  }

  count(target: string): number {
    return this.inflight.get(target) ?? 0;
  }

  /** A slot is free now (and nobody waits for one). */
  hasRoom(target: string): boolean {
    return this.count(target) < this.cap && !this.waiting(target);
  }

  waiting(target: string): number {
    return this.waiters.get(target)?.length ?? 0;
  }

  /** Takes a slot if one is free. */
  tryTake(target: string): boolean {
    const n = this.count(target);
    if (n >= this.cap) return false;
    this.inflight.set(target, n + 1);
    return true;
  }

  /** Calls `granted` once a slot is taken for it (now, or when one frees; waiters in order). */
  wait(target: string, granted: () => void): void {
    if (!this.waiting(target) && this.tryTake(target)) return granted();
    const list = this.waiters.get(target);
    if (list) list.push(granted);
    else this.waiters.set(target, [granted]);
  }

  /** A slot for the target, as a promise. */
  take(target: string): Promise<void> {
    return new Promise<void>((resolve) => this.wait(target, resolve));
  }

  /** Frees a slot: handed to the target's oldest waiter (which then holds it), else returned. */
  release(target: string): void {
    const list = this.waiters.get(target);
    const next = list?.shift();
    if (list && !list.length) this.waiters.delete(target);
    if (next) return next();
    const n = this.count(target) - 1;
    if (n <= 0) this.inflight.delete(target);
    else this.inflight.set(target, n);
  }

  /** Forgets every slot and waiter (a sender that gives up as a crash would). */
  clear(): void {
    this.inflight.clear();
    this.waiters.clear();
  }
}
