import type { Logger } from 'pino';
import type { FerryConfig } from '../../config/schema.js';
import type { CooldownPolicy, FailureCooldowns } from '../../store/types.js';
import type { BindFailureReason, CustomerMetrics } from './customer-metrics.js';

/** What checking a bind's credentials (and address) decided. */
export type BindVerdict<C> = { ok: true; credentials: C } | { ok: false; reason: BindFailureReason };

/** Refusals that say a guess was wrong: they count toward the pair's cool-down. */
const GUESS_FAILURES: ReadonlySet<BindFailureReason> = new Set(['unknown_system_id', 'wrong_password', 'ip_not_allowed']);

/** The policy from the config (smpp.bindGuard, in seconds). */
export function bindGuardPolicy(c: FerryConfig['smpp']['bindGuard']): CooldownPolicy {
  const ms = (s: number) => Math.max(1, Math.round(s * 1000));
  return { threshold: c.failures, firstMs: ms(c.firstCooldownSeconds), maxMs: ms(Math.max(c.maxCooldownSeconds, c.firstCooldownSeconds)), forgetMs: ms(c.forgetSeconds) };
}

/** The per-address budget from the config: the same cool-downs, from smpp.bindGuard.addressFailures on. */
export function addressBudgetPolicy(c: FerryConfig['smpp']['bindGuard']): CooldownPolicy {
  return { ...bindGuardPolicy(c), threshold: c.addressFailures };
}

export interface BindGuardOptions {
  cooldowns: FailureCooldowns;
  policy: CooldownPolicy;
  /** Failed binds of one address across every system_id; none when absent (only the pairs are counted). */
  addressPolicy?: CooldownPolicy | null;
  log: Logger;
  metrics?: CustomerMetrics;
}

/**
 * Slows password guessing on customer binds. Failed binds are counted per (remote address, system_id); from
 * `policy.threshold` of them on, the pair's binds are refused (`cooling_down`, ESME_RBINDFAIL) without checking the
 * password, for a cool-down that doubles per further failure up to `policy.maxMs`. The right password is refused too
 * during a cool-down, so a refusal tells a guesser nothing. A bind that passes resets the pair. Other addresses, and so
 * the account's allow-listed ones, keep binding as usual: one address's failures cool down only that address.
 *
 * Rotating system_ids from one address does not escape: with `addressPolicy`, the address's failures across every
 * system_id are counted too, and from its threshold on every bind from that address is refused (`over_budget`,
 * ESME_RBINDFAIL) the same way. A success does not reset the address's count (one known credential must not buy
 * more guesses at the others); it is forgotten after `forgetMs`.
 *
 * Counts live in the shared store (Redis with several instances). On one instance the checks of one address run one
 * after another, so a burst of parallel connections is counted guess by guess instead of all passing the check before
 * the first failure is written (and one address never has more than one password check running).
 */
export class BindGuard {
  /** The tail of each pair's queue of checks on this instance; an entry lives only while a check of the pair runs. */
  private readonly turns = new Map<string, Promise<void>>();

  constructor(private readonly o: BindGuardOptions) {}

  /** Checks with `verify` unless the pair is cooling down; counts the outcome. */
  async check<C>(address: string, systemId: string, verify: () => Promise<BindVerdict<C>>): Promise<BindVerdict<C>> {
    const key = `smpp-bind:${address}|${systemId}`;
    const addressKey = `smpp-bind-address:${address}`;
    const addressPolicy = this.o.addressPolicy;
    return this.inTurn(addressKey, async () => {
      if (addressPolicy && (await this.o.cooldowns.remainingMs(addressKey)) > 0) return { ok: false, reason: 'over_budget' };
      if ((await this.o.cooldowns.remainingMs(key)) > 0) return { ok: false, reason: 'cooling_down' };
      const verdict = await verify();
      if (verdict.ok) await this.o.cooldowns.reset(key);
      else if (GUESS_FAILURES.has(verdict.reason)) {
        await this.failed(key, address, systemId);
        if (addressPolicy) await this.addressFailed(addressKey, address, addressPolicy);
      }
      return verdict;
    });
  }

  private async failed(key: string, address: string, systemId: string): Promise<void> {
    const { failures, cooldownMs } = await this.o.cooldowns.fail(key, this.o.policy);
    if (cooldownMs === 0) return;
    this.o.metrics?.cooldownStarted();
    // The address is named here, never in a metric label (unbounded).
    this.o.log.warn(
      { remote: address, systemId, failures, cooldownMs },
      `${failures} failed binds of system_id ${systemId} from ${address}: its binds from there are refused (ESME_RBINDFAIL) for ${Math.ceil(cooldownMs / 1000)} s`,
    );
  }

  private async addressFailed(key: string, address: string, policy: CooldownPolicy): Promise<void> {
    const { failures, cooldownMs } = await this.o.cooldowns.fail(key, policy);
    if (cooldownMs === 0) return;
    this.o.metrics?.cooldownStarted();
    this.o.log.warn(
      { remote: address, failures, cooldownMs },
      `${failures} failed binds from ${address} across system_ids: every bind from there is refused (ESME_RBINDFAIL) for ${Math.ceil(cooldownMs / 1000)} s`,
    );
  }

  private async inTurn<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.turns.get(key);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    this.turns.set(key, mine);
    try {
      if (before) await before;
      return await fn();
    } finally {
      release();
      if (this.turns.get(key) === mine) this.turns.delete(key);
    }
  }
}
