import type { SendResult } from './types.js';

/**
 * What to do about a provider's error:
 * - `retry`: trouble at the provider (5xx, "temporarily unavailable"): retried with exponential backoff; counts
 *   towards the endpoint's circuit breaker.
 * - `backoff`: the provider throttles (429, rate-limit codes): retried after its Retry-After, the endpoint pauses until
 *   then (its other jobs wait in the table); not a breaker failure, the provider is alive.
 * - `later`: only this message must wait (a per-recipient rate limit, media to fetch again): retried after its
 *   Retry-After or with backoff; the endpoint goes on and the breaker counts the answer as a sign of life.
 * - `fail`: permanent for this message (bad recipient, rejected content, bad credentials): final failed state with the
 *   provider's code kept beside Ferry's.
 */
export type ErrorAction = 'retry' | 'backoff' | 'later' | 'fail';

export interface ErrorRule {
  /** Ferry's code, UPPER_SNAKE (what customers see in data.error and ferry_error). */
  ferryCode: string;
  action: ErrorAction;
  /** A fixed text instead of the provider's message. */
  message?: string;
}

export interface ClassifyInput {
  /** The provider's code as it sent it (number or string; kept verbatim as text). */
  providerCode: string | number | null | undefined;
  /** The provider's message, when it gave one. */
  message?: string;
  /** From the provider's Retry-After, when it gave one. */
  retryAfterMs?: number;
  /** HTTP status, for the fallback of codes the table does not list. */
  httpStatus?: number;
}

/**
 * ONE table per provider, courier-style: provider code → Ferry code and retry / back off / later / fail. Adapters classify
 * every error answer through it, so how a provider's errors are treated is read in one place and tested as a table.
 * Codes the table does not list fall back by HTTP status: 429 backs off, 408 and 5xx retry, anything else fails
 * (PROVIDER_REJECTED) with the provider's code kept.
 */
export class ErrorTable {
  private readonly rules: ReadonlyMap<string, ErrorRule>;

  constructor(
    readonly provider: string,
    rules: Readonly<Record<string, ErrorRule>>,
  ) {
    const m = new Map<string, ErrorRule>();
    for (const [code, rule] of Object.entries(rules)) {
      if (!/^[A-Z][A-Z0-9_]*$/.test(rule.ferryCode)) throw new Error(`${provider} error ${code}: Ferry code ${rule.ferryCode} is not UPPER_SNAKE`);
      m.set(code, rule);
    }
    this.rules = m;
  }

  /** The rule for a code, or undefined. */
  rule(providerCode: string | number): ErrorRule | undefined {
    return this.rules.get(String(providerCode));
  }

  /** The provider's error as a SendResult (retry or fail); never `sent`. */
  classify(input: ClassifyInput): Exclude<SendResult, { kind: 'sent' }> {
    const code = input.providerCode === null || input.providerCode === undefined || input.providerCode === '' ? undefined : String(input.providerCode);
    const rule = code !== undefined ? this.rules.get(code) : undefined;
    const fallback = rule ? null : this.byStatus(input.httpStatus);
    const action = rule?.action ?? fallback!.action;
    const ferryCode = rule?.ferryCode ?? fallback!.ferryCode;
    const message = rule?.message ?? input.message ?? (input.httpStatus ? `${this.provider} answered HTTP ${input.httpStatus}` : `${this.provider} error ${code ?? ''}`.trim());
    const providerCode = code ?? (input.httpStatus !== undefined ? `HTTP ${input.httpStatus}` : undefined);
    if (action === 'fail') return { kind: 'fail', code: ferryCode, providerCode, message };
    return {
      kind: 'retry',
      code: ferryCode,
      providerCode,
      message,
      ...(input.retryAfterMs !== undefined ? { retryAfterMs: input.retryAfterMs } : {}),
      ...(action === 'backoff' ? { throttled: true } : {}),
      ...(action === 'later' ? { providerHealthy: true } : {}),
    };
  }

  private byStatus(status: number | undefined): { action: ErrorAction; ferryCode: string } {
    if (status === 429) return { action: 'backoff', ferryCode: 'PROVIDER_THROTTLED' };
    if (status === undefined || status === 408 || status >= 500) return { action: 'retry', ferryCode: 'PROVIDER_UNAVAILABLE' };
    return { action: 'fail', ferryCode: 'PROVIDER_REJECTED' };
  }
}
