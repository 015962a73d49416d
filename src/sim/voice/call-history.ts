import type { TrunkCall } from './trunk-call.js';

/**
 * The simulator's calls, oldest first, bounded twice: at most `size` calls (the oldest finished ones go first; live
 * calls are never dropped) and at most `budgetSamples` of recorded audio over all of them (older recordings are
 * dropped, their measurements kept), so a long-running simulator stays small.
 */
export class CallHistory {
  private readonly calls = new Map<string, TrunkCall>();

  constructor(private readonly size: number, private readonly budgetSamples: number) {}

  add(call: TrunkCall): void {
    this.calls.set(call.id, call);
    if (this.calls.size <= this.size) return;
    for (const old of this.calls.values()) {
      if (this.calls.size <= this.size) break;
      if (!old.live) this.calls.delete(old.id);
    }
  }

  get(id: string): TrunkCall | undefined {
    return this.calls.get(id);
  }

  list(): TrunkCall[] {
    return [...this.calls.values()];
  }

  live(): TrunkCall[] {
    return this.list().filter((c) => c.live);
  }

  /** After a call settled: keep the newest recordings within the budget. */
  enforceBudget(): void {
    let held = 0;
    const newestFirst = this.list().reverse();
    for (const call of newestFirst) {
      held += call.recordedSamples;
      if (held > this.budgetSamples && call.recordedSamples > 0) {
        held -= call.recordedSamples;
        call.dropRecording();
      }
    }
  }
}
