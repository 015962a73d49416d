/** Where (upstream, upstream message id) → (Ferry message id, part) is kept until the receipt comes back. */

export interface CorrelationRef {
  /** Ferry message id. */
  messageId: string;
  partIndex: number;
  parts: number;
}

export interface CorrelationEntry extends CorrelationRef {
  upstreamId: string;
  /** The canonical id (see correlationKey). */
  key: string;
  createdAt: number;
}

export interface CorrelationMatch {
  ref: CorrelationRef;
  /** Which of the looked-up keys matched: 0 is the receipt's own canonical id, higher ones hex/decimal conversions. */
  keyIndex: number;
}

/**
 * The storage contract. The in-memory store serves one instance; a durable one (SQL, Redis) survives restarts and
 * is visible to every instance, which matters because a receipt may reach another instance than the submit did.
 */
export interface CorrelationStore {
  /** True when entries written by other instances become visible: the correlator then re-reads for held receipts. */
  readonly shared: boolean;
  put(entries: readonly CorrelationEntry[]): Promise<void>;
  /** The entry for the first of `keys` that exists (keys in order of preference). */
  find(upstreamId: string, keys: readonly string[]): Promise<CorrelationMatch | undefined>;
  /** Drops entries created before `before` (epoch ms); returns how many. */
  purge(before: number): Promise<number>;
  close(): Promise<void>;
}
