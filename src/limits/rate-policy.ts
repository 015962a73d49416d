/**
 * A product's rate limits as a table, taken in one call. A table maps an action (an endpoint, e.g.
 * 'messenger.send') to its rules; a rule limits one subject per second, minute and/or day:
 *
 *   account    every action of the account that has an account rule, together
 *   key        the API key making the call
 *   endpoint   this action for this account
 *   recipient  the recipient of this action for this account (e.g. "5 per day to one number")
 *
 * Every rule of the action is taken at once through RateWindows.takeAll: all counted, or none (a refusal by the
 * recipient rule does not use up the account's quota). The keys all carry the account id as their hash tag, so on
 * Redis the call is one script on one slot.
 */
import { RATE_WINDOWS, type RateLimitEntry, type RateWindowResult, type RateWindows, type WindowLimits } from '../store/types.js';

export type RateSubject = 'account' | 'key' | 'endpoint' | 'recipient';

export type RateRule = WindowLimits & { readonly per: RateSubject };

/** action → its rules. */
export type RateTable = Readonly<Record<string, readonly RateRule[]>>;

/** Who is calling (an authenticated request's AuthContext fits), and to whom. */
export interface RateCaller {
  accountId: string;
  /** Needed by `key` rules; a rule whose subject the caller does not name (no key over SMPP, no recipient) is skipped. */
  keyId?: string | null;
  recipient?: string | null;
}

export type RatePolicyResult = Extract<RateWindowResult, { allowed: true }> | (Extract<RateWindowResult, { allowed: false }> & { per: RateSubject });

const SUBJECTS: readonly RateSubject[] = ['account', 'key', 'endpoint', 'recipient'];

export class RatePolicy {
  constructor(
    private readonly windows: RateWindows,
    private readonly table: RateTable,
  ) {
    for (const [action, rules] of Object.entries(table)) {
      for (const rule of rules) {
        if (!SUBJECTS.includes(rule.per)) throw new RangeError(`rate table ${action}: unknown subject ${JSON.stringify(rule.per)}`);
        if (!RATE_WINDOWS.some((w) => rule[w] !== undefined)) throw new RangeError(`rate table ${action}: a ${rule.per} rule limits no window`);
      }
    }
  }

  /** The keyed limits an action takes for a caller (what take sends to RateWindows). Unknown action: an error. */
  entries(action: string, caller: RateCaller): RateLimitEntry[] {
    const rules = Object.hasOwn(this.table, action) ? this.table[action] : undefined;
    if (!rules) throw new Error(`rate policy: no rules for action ${JSON.stringify(action)}`);
    const out: RateLimitEntry[] = [];
    for (const rule of rules) {
      const key = subjectKey(rule.per, action, caller);
      if (key !== null) out.push({ key, limits: rule });
    }
    return out;
  }

  /** Takes every rule of the action, all or nothing. `cost` (default 1) counts against every rule. */
  async take(action: string, caller: RateCaller, cost = 1): Promise<RatePolicyResult> {
    const entries = this.entries(action, caller);
    const r = await this.windows.takeAll(entries, cost);
    if (r.allowed) return r;
    return { ...r, per: r.key.slice(0, r.key.indexOf(':')) as RateSubject };
  }
}

/**
 * The key of a subject: `account:{acc}`, `key:{acc}:<keyId>`, `endpoint:{acc}:<action>`, `recipient:{acc}:<number>`.
 * The braces are the Redis hash tag (one slot per account); ids holding braces are refused so they cannot move it.
 */
export function subjectKey(per: RateSubject, action: string, caller: RateCaller): string | null {
  const acc = caller.accountId;
  if (!acc || /[{}]/.test(acc)) throw new RangeError(`rate policy: account id ${JSON.stringify(acc)} is empty or holds braces`);
  switch (per) {
    case 'account':
      return `account:{${acc}}`;
    case 'key':
      return caller.keyId ? `key:{${acc}}:${caller.keyId}` : null;
    case 'endpoint':
      return `endpoint:{${acc}}:${action}`;
    case 'recipient':
      return caller.recipient ? `recipient:{${acc}}:${caller.recipient}` : null;
  }
}
