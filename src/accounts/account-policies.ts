import type { NumberValidation } from '../numbers/number-validation.js';
import type { Db } from '../store/types.js';

/** What the message path needs to know about an account on every submit. */
export interface AccountPolicy {
  id: string;
  status: 'active' | 'suspended';
  currency: string;
  defaultCountry: string | null;
  /** Submits per second; null: the server default. */
  maxTps: number | null;
  /** Recipient prefixes the account may send to; null: anyone. */
  allowedRecipients: string[] | null;
  /** How strictly recipients are checked; null: the route rule's, else the ingress default. */
  numberValidation: NumberValidation | null;
}

/**
 * A short-lived cache of account policies so a submit does not cost a database read. Changes made through
 * AccountService reach this process at once (invalidate); other instances see them within `ttlMs`.
 */
export class AccountPolicies {
  private readonly cache = new Map<string, { policy: AccountPolicy | null; until: number }>();
  /** Lookups under way: a burst of submits for one account shares one query. */
  private readonly loading = new Map<string, Promise<AccountPolicy | null>>();
  /** Bumped by invalidate(): a lookup that started before a change does not cache its stale answer. */
  private generation = 0;

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 5000,
    private readonly clock: () => number = Date.now,
  ) {}

  async get(accountId: string): Promise<AccountPolicy | null> {
    const now = this.clock();
    const hit = this.cache.get(accountId);
    if (hit && hit.until > now) return hit.policy;
    let p = this.loading.get(accountId);
    if (!p) {
      p = this.load(accountId, now).finally(() => this.loading.delete(accountId));
      this.loading.set(accountId, p);
    }
    return p;
  }

  private async load(accountId: string, now: number): Promise<AccountPolicy | null> {
    const generation = this.generation;
    const { rows } = await this.db.query<{
      id: string;
      status: 'active' | 'suspended';
      currency: string;
      default_country: string | null;
      max_tps: number | null;
      allowed_recipients: string[] | null;
      number_validation: NumberValidation | null;
    }>(`SELECT id, status, currency, default_country, max_tps, allowed_recipients, number_validation FROM accounts WHERE id = $1`, [accountId]);
    const r = rows[0];
    const policy = r
      ? {
          id: r.id,
          status: r.status,
          currency: r.currency,
          defaultCountry: r.default_country,
          maxTps: r.max_tps,
          allowedRecipients: r.allowed_recipients,
          numberValidation: r.number_validation,
        }
      : null;
    if (generation !== this.generation) return policy;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(accountId, { policy, until: now + this.ttlMs });
    return policy;
  }

  invalidate(accountId: string): void {
    this.generation++;
    this.loading.delete(accountId);
    this.cache.delete(accountId);
  }
}
