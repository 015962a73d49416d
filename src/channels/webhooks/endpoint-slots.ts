/**
 * Requests in flight per endpoint, shared by both delivery paths of an instance (the event stream and the retry set),
 * so that `maxConcurrencyPerEndpoint` holds for the endpoint whichever path sends. A freed slot goes straight to the
 * endpoint's oldest waiter, if any.
 */
export class EndpointSlots {
  private readonly inflight = new Map<string, number>();
  private readonly waiters = new Map<string, (() => void)[]>();

  constructor(private readonly cap: number) {}

  /** Requests in flight to one endpoint at most. */
  capOf(): number {
    return this.cap;
  }

  count(endpointId: string): number {
    return this.inflight.get(endpointId) ?? 0;
  }

  waiting(endpointId: string): number {
    return this.waiters.get(endpointId)?.length ?? 0;
  }

  /** Takes a slot if one is free. */
  tryTake(endpointId: string): boolean {
    const n = this.count(endpointId);
    if (n >= this.cap) return false;
    this.inflight.set(endpointId, n + 1);
    return true;
  }

  /** Calls `granted` once a slot is taken for it (now, or when one frees; waiters in order). */
  wait(endpointId: string, granted: () => void): void {
    if (!this.waiting(endpointId) && this.tryTake(endpointId)) return granted();
    const list = this.waiters.get(endpointId);
    if (list) list.push(granted);
    else this.waiters.set(endpointId, [granted]);
  }

  /** A slot for the endpoint, as a promise. */
  take(endpointId: string): Promise<void> {
    return new Promise<void>((resolve) => this.wait(endpointId, resolve));
  }

  /** Frees a slot: handed to the endpoint's oldest waiter (which then holds it), else returned. */
  release(endpointId: string): void {
    const list = this.waiters.get(endpointId);
    const next = list?.shift();
    if (list && !list.length) this.waiters.delete(endpointId);
    if (next) return next();
    const n = this.count(endpointId) - 1;
    if (n <= 0) this.inflight.delete(endpointId);
    else this.inflight.set(endpointId, n);
  }
}
