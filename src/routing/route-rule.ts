import type { NumberValidation } from '../numbers/number-validation.js';
import type { RouteRuleConfig } from '../config/schema.js';
import { filtersFromMatch, type RouteFilter, type RouteInput } from './filters.js';
import { RoutingError } from './routing-error.js';

/** Where a message goes: the rule that matched and its upstreams in the order to try them. */
export interface RouteChoice {
  readonly ruleId: string;
  /** Primary first, then failover candidates. Shared and frozen: callers must not modify it. */
  readonly upstreamIds: readonly string[];
  /** The rule's recipient check, when it sets one. */
  readonly numberValidation?: NumberValidation;
}

/** A rule as shown by `ferry routes list` and the admin API. */
export interface RouteRuleView {
  id: string;
  match: string[];
  upstreams: string[];
  weights: number[] | null;
  numberValidation: NumberValidation | null;
  /** Upstream an operator switched this rule to, or null. */
  override: string | null;
  /** The candidate order used now (override first when switched). */
  effective: string[];
  switches: number;
}

/**
 * One routing rule: filters, ordered upstream candidates with optional weights, and an override set by a route
 * switch. Every possible answer is computed when the rule or its override changes, so choosing allocates nothing.
 */
export class RouteRule {
  readonly id: string;
  readonly upstreams: readonly string[];
  readonly weights: readonly number[] | undefined;
  readonly numberValidation: NumberValidation | undefined;
  switches = 0;
  private readonly filters: RouteFilter[];
  private overrideId: string | null = null;
  private overrideChoice: RouteChoice | undefined;
  /** One choice per possible primary (weighted), or a single one. */
  private readonly choices: RouteChoice[];
  /** Cumulative weights aligned with `choices`, when weighted. */
  private readonly cumulative: number[] | undefined;
  private readonly totalWeight: number;

  constructor(config: RouteRuleConfig) {
    if (!config.upstreams.length) throw new RoutingError('INVALID_RULE', `rule ${config.id} has no upstreams`);
    if (new Set(config.upstreams).size !== config.upstreams.length) throw new RoutingError('INVALID_RULE', `rule ${config.id} lists an upstream twice`);
    if (config.weights && config.weights.length !== config.upstreams.length) {
      throw new RoutingError('INVALID_RULE', `rule ${config.id}: ${config.weights.length} weights for ${config.upstreams.length} upstreams`);
    }
    this.id = config.id;
    this.upstreams = Object.freeze([...config.upstreams]);
    this.numberValidation = config.numberValidation;
    this.filters = filtersFromMatch(config.match);
    const weights = config.weights;
    const total = weights ? weights.reduce((s, w) => s + w, 0) : 0;
    if (weights && total > 0) {
      // Weighted: the primary is drawn among the upstreams with a positive weight; the others keep their
      // configured order behind it as failover (a weight of 0 makes an upstream failover-only).
      this.weights = Object.freeze([...weights]);
      this.choices = [];
      this.cumulative = [];
      let acc = 0;
      for (let i = 0; i < this.upstreams.length; i++) {
        if (weights[i] <= 0) continue;
        acc += weights[i];
        this.cumulative.push(acc);
        this.choices.push(this.choiceWithPrimary(this.upstreams[i]));
      }
      this.totalWeight = acc;
    } else {
      this.weights = weights ? Object.freeze([...weights]) : undefined;
      this.choices = [this.choice(this.upstreams)];
      this.cumulative = undefined;
      this.totalWeight = 0;
    }
  }

  matches(msg: RouteInput): boolean {
    for (const f of this.filters) if (!f.matches(msg)) return false;
    return true;
  }

  /** The candidates for one message; `random` in [0, 1) draws the weighted primary. */
  choose(random: () => number): RouteChoice {
    if (this.overrideChoice) return this.overrideChoice;
    if (!this.cumulative) return this.choices[0];
    const roll = random() * this.totalWeight;
    for (let i = 0; i < this.cumulative.length; i++) if (roll < this.cumulative[i]) return this.choices[i];
    return this.choices[this.choices.length - 1];
  }

  get override(): string | null {
    return this.overrideId;
  }

  /**
   * Sends all of this rule's traffic to `upstreamId` first; the configured upstreams stay behind it as failover,
   * so a switch to an upstream that then goes down does not strand the traffic. null clears the switch.
   */
  setOverride(upstreamId: string | null): void {
    this.overrideId = upstreamId;
    this.overrideChoice = upstreamId === null ? undefined : this.choiceWithPrimary(upstreamId);
  }

  /** Candidate order in effect now, without the weighted draw (the configured order). */
  effective(): string[] {
    return [...(this.overrideChoice ?? this.choices[0]).upstreamIds];
  }

  describeMatch(): string[] {
    return this.filters.map((f) => f.describe());
  }

  view(): RouteRuleView {
    return {
      id: this.id,
      match: this.describeMatch(),
      upstreams: [...this.upstreams],
      weights: this.weights ? [...this.weights] : null,
      numberValidation: this.numberValidation ?? null,
      override: this.overrideId,
      effective: this.effective(),
      switches: this.switches,
    };
  }

  private choiceWithPrimary(primary: string): RouteChoice {
    const rest = this.upstreams.filter((u) => u !== primary);
    return this.choice(Object.freeze([primary, ...rest]));
  }

  private choice(upstreamIds: readonly string[]): RouteChoice {
    const validation = this.numberValidation ? { numberValidation: this.numberValidation } : {};
    return Object.freeze({ ruleId: this.id, upstreamIds, ...validation });
  }
}
