import type { SendResult } from '../../outbound/index.js';

/** What one device of a batch came to. */
export type DeviceOutcome =
  | { kind: 'sent'; deviceId: string; providerId: string }
  | { kind: 'invalidated'; deviceId: string; code: string; providerCode: string | null; message: string }
  | { kind: 'failed'; deviceId: string; code: string; providerCode: string | null; message: string }
  | { kind: 'again'; deviceId: string; code: string; providerCode: string | null; message: string; retryAfterMs: number | null };

/** A batch's outcomes, and whether the app's credentials were refused (the app's sends of that service pause). */
export interface BatchResult {
  outcomes: DeviceOutcome[];
  credentialsRefused: { code: string; message: string } | null;
  /** The most any device was told to wait (Retry-After), for the batch of devices to try again. */
  retryAfterMs: number | null;
  at: number;
}

/**
 * Hands a batch's per-device outcomes from the adapter (which sends) to the product's onChange (which records them in
 * the transaction that ends the job). The pipeline records a job's result in the process that sent it, right after
 * the send, so an in-process map is enough; what a crash loses here is the batch itself, which is sent again when its
 * claim runs out (the window stated in docs/push.md). Entries the pipeline never recorded (a claim lost meanwhile) are
 * swept after `maxAgeMs`.
 */
export class BatchOutcomes {
  private readonly byJob = new Map<string, BatchResult>();

  constructor(private readonly maxAgeMs = 10 * 60_000) {}

  put(jobId: string, result: BatchResult): void {
    if (this.byJob.size > 1000) this.sweep(result.at);
    this.byJob.set(jobId, result);
  }

  /** The outcomes of a job, once: taken by the transaction that records them. */
  take(jobId: string): BatchResult | undefined {
    const r = this.byJob.get(jobId);
    this.byJob.delete(jobId);
    return r;
  }

  drop(jobId: string): void {
    this.byJob.delete(jobId);
  }

  get size(): number {
    return this.byJob.size;
  }

  private sweep(now: number): void {
    for (const [id, r] of this.byJob) if (now - r.at > this.maxAgeMs) this.byJob.delete(id);
  }
}

/** Retry-After of a result, when it had one. */
export function retryAfterOf(r: SendResult): number | null {
  return r.kind === 'retry' && r.retryAfterMs !== undefined ? r.retryAfterMs : null;
}
