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

/** What a kept receipt carries (a receipt's fields, dates as epoch ms, the network error code in hex). */
export interface KeptReceiptData {
  id: string;
  state: number;
  stat: string;
  final: boolean;
  errorCode?: string;
  networkErrorCode?: string;
  submitDate?: number;
  doneDate?: number;
  receivedAt: number;
}

/** A receipt that matched no correlation within the hold, kept until its submit's correlation is recorded. */
export interface KeptReceipt {
  upstreamId: string;
  /** The receipt id's lookup keys (receiptLookupKeys), in order of preference. */
  keys: string[];
  receipt: KeptReceiptData;
  keptAt: number;
}

export interface KeptReceiptMatch {
  /** The store's id of the kept receipt (for dropKept). */
  id: string;
  kept: KeptReceipt;
  match: CorrelationMatch;
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
  /** Keeps a receipt that matched nothing yet; resolves once it is stored (then the SMSC may be acknowledged). */
  keep(receipt: KeptReceipt): Promise<void>;
  /** Kept receipts whose correlation exists now, oldest first, at most `limit`; they stay kept until dropKept. */
  matchKept(limit: number): Promise<KeptReceiptMatch[]>;
  dropKept(ids: readonly string[]): Promise<void>;
  /** Drops the receipts kept before `before` (epoch ms) and returns them: they end unmatched. */
  purgeKept(before: number): Promise<KeptReceipt[]>;
  close(): Promise<void>;
}
