/**
 * The outbound pipeline's contracts: what a provider adapter implements, what a send returns, and the job as stored
 * in `outbound_jobs`. Products (messenger, email, push, voice, USSD, customers' apps) enqueue jobs; the pipeline claims
 * them, calls the adapter and records the result. See docs/outbound.md.
 */

/** A job as the pipeline hands it to an adapter (the row of outbound_jobs). */
export interface OutboundJob<P = unknown> {
  /** Ferry's id of the job, prefix `job_`. */
  id: string;
  /** The product that owns it (`messenger`, `email`, ...): its state machine and events. */
  product: string;
  /** The adapter that sends it. */
  provider: string;
  accountId: string;
  /** The key of the product's own row (its message id): events carry it as data.messageId. */
  messageId: string;
  /** What the adapter needs to send (recipient, body, credentials reference): JSON. */
  payload: P;
  /** The product's state (its StateMachine). */
  state: string;
  /** Attempts made so far (requests whose outcome was recorded). */
  attempts: number;
  /** Epoch ms: not sent again before this. */
  nextAttemptAt: number;
  /** Epoch ms: past this without success the job fails (DEADLINE_EXCEEDED). */
  deadlineAt: number;
  /** The provider's id of the sent message, once known. */
  providerId: string | null;
  /** Ferry's error code of the last failed attempt, or of the failure. */
  ferryError: string | null;
  /** The provider's own code of that error, verbatim. */
  providerError: string | null;
  errorMessage: string | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * What one send came to. Adapters answer every provider answer with one of these and never throw for them; a thrown
 * error, or no answer within the pipeline's send timeout, counts as `retry` (PROVIDER_ERROR / PROVIDER_TIMEOUT).
 */
export type SendResult =
  | { kind: 'sent'; providerId: string }
  | {
      kind: 'retry';
      /** The provider said when to come back (Retry-After): the next attempt is not made before it. */
      retryAfterMs?: number;
      /** The provider is throttling (an error table's `backoff`): the endpoint pauses, the breaker does not count it. */
      throttled?: boolean;
      /**
       * The provider is fine, only this message must wait (an error table's `later`: a per-recipient rate limit, a
       * media fetch to try again): neither a breaker failure nor a pause of the endpoint.
       */
      providerHealthy?: boolean;
      code: string;
      providerCode?: string;
      message: string;
    }
  | { kind: 'fail'; code: string; providerCode?: string; message: string };

export interface ProviderAdapter<P = unknown> {
  /** Unique, `[a-z0-9_-]`; the jobs' `provider` column and the `provider` metric label. */
  readonly name: string;
  /**
   * The circuit breaker's key: what fails together (a host, an SMTP relay, an API project). Jobs of an endpoint whose
   * breaker is open wait in the table.
   */
  endpointOf(job: OutboundJob<P>): string;
  /** One attempt. `signal` aborts at the send timeout; the adapter should give up then. */
  send(job: OutboundJob<P>, signal: AbortSignal): Promise<SendResult>;
}

/** A job to enqueue (in the product's transaction). */
export interface NewOutboundJob<P = unknown> {
  product: string;
  provider: string;
  accountId: string;
  messageId: string;
  payload: P;
  /** Served before bulk jobs of the same provider (OTP-like traffic). */
  priority?: boolean;
  /** Epoch ms of the first attempt (scheduled send); default now. */
  notBefore?: number;
  /** Epoch ms; default now + the product's deadline. */
  deadlineAt?: number;
}

/** What enqueue returns: hand it to `wake` once the transaction has committed. */
export interface EnqueuedJob {
  id: string;
  provider: string;
  messageId: string;
  lane: 'priority' | 'bulk';
  /** Epoch ms of the first attempt (its next_attempt_at). */
  runAt: number;
}

/** How a status update or a result was taken (the StateMachine's answer; `not_found` for an unknown job). */
export type StatusOutcome = 'changed' | 'late' | 'unchanged' | 'invalid' | 'not_found';

/** A state change the pipeline applied, as a product's onChange hook sees it (inside the same transaction). */
export interface StateChange<P = unknown> {
  job: OutboundJob<P>;
  from: string;
  to: string;
  detail: Record<string, unknown>;
}
