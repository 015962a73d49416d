import { Counter, type Registry } from 'prom-client';

/** The label that counts every account past the cap. Ferry's account ids never start with an underscore. */
export const OTHER_ACCOUNTS = '_other';

interface AccountHandles {
  accepted: Counter.Internal;
  final: Map<string, Counter.Internal>;
}

/**
 * SMS messages per account: accepted into the ledger, and reaching a final status. A time series per account is what
 * an operator of a shared gateway asks of a dashboard, but accounts are data, not code: only the first `maxAccounts`
 * this instance counts get a label of their own, every later one is counted under `_other`, so a gateway with many
 * accounts keeps a bounded set of series (messages.accountMetrics). 0 labels none (everything under `_other`).
 * Label children are looked up once per account, so the hot paths do a map lookup and an add.
 */
export class AccountMessageMetrics {
  private readonly accepted: Counter<'account'>;
  private readonly final: Counter<'account' | 'status'>;
  private readonly accounts = new Map<string, AccountHandles>();
  private other: AccountHandles | undefined;

  constructor(
    registry: Registry,
    private readonly maxAccounts: number,
  ) {
    this.accepted = new Counter({
      name: 'ferry_account_messages_accepted_total',
      help: `SMS messages accepted into the ledger, by account (the first messages.accountMetrics accounts; the rest as ${OTHER_ACCOUNTS})`,
      labelNames: ['account'] as const,
      registers: [registry],
    });
    this.final = new Counter({
      name: 'ferry_account_messages_final_total',
      help: `SMS messages reaching a final status (delivered, undelivered, expired, rejected, failed, cancelled), by account (as accepted) and status`,
      labelNames: ['account', 'status'] as const,
      registers: [registry],
    });
  }

  /** `n` messages of the account accepted. */
  acceptedOf(accountId: string, n = 1): void {
    this.handles(accountId).accepted.inc(n);
  }

  /** A message of the account reached `status`, a final one. */
  finalOf(accountId: string, status: string): void {
    const h = this.handles(accountId);
    let c = h.final.get(status);
    if (!c) {
      c = this.final.labels(h === this.other ? OTHER_ACCOUNTS : accountId, status);
      h.final.set(status, c);
    }
    c.inc();
  }

  /** How many accounts have a label of their own (the cap's use, for tests). */
  get labelled(): number {
    return this.accounts.size;
  }

  private handles(accountId: string): AccountHandles {
    const known = this.accounts.get(accountId);
    if (known) return known;
    if (this.accounts.size >= this.maxAccounts) return (this.other ??= { accepted: this.accepted.labels(OTHER_ACCOUNTS), final: new Map() });
    const h = { accepted: this.accepted.labels(accountId), final: new Map<string, Counter.Internal>() };
    this.accounts.set(accountId, h);
    return h;
  }
}
