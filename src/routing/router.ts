import { EventEmitter } from 'node:events';
import type { RouteRuleConfig } from '../config/schema.js';
import type { RouteInput } from './filters.js';
import { RouteRule, type RouteChoice, type RouteRuleView } from './route-rule.js';
import { RoutingError } from './routing-error.js';

/** A route switch or its clearing, as the caller persists, broadcasts, logs and counts it. */
export interface RouteSwitchEvent {
  ruleId: string;
  /** The new override; null when the switch was cleared. */
  to: string | null;
  /** The override before; null when the rule was not switched. */
  previousOverride: string | null;
  /** Candidate order before and after (configured order, override first). */
  before: string[];
  after: string[];
  /** Who asked: e.g. 'admin', 'cli', 'restore', or 'remote' for a switch received from another instance. */
  origin: string;
  at: number;
}

export interface SwitchResult {
  ruleId: string;
  previousOverride: string | null;
  before: string[];
  after: string[];
}

export interface RouterOptions {
  /** Draws the weighted primary; default Math.random. */
  random?: () => number;
  /** When given, switching to an upstream it does not know is refused (UNKNOWN_UPSTREAM). */
  knowsUpstream?: (id: string) => boolean;
  clock?: () => number;
}

interface RouterEvents {
  switch: [RouteSwitchEvent];
}

/**
 * Rules matched in order; the first that matches decides the candidates. Pure and allocation-free on the
 * message path: no I/O, no awaits. Switches are announced through `onSwitch` / the 'switch' event so the caller
 * can store and broadcast them; a switch is effective for the next `candidates()` call.
 */
export class Router extends EventEmitter<RouterEvents> {
  private ordered: RouteRule[] = [];
  private byId = new Map<string, RouteRule>();
  private readonly random: () => number;
  private readonly knowsUpstream: ((id: string) => boolean) | undefined;
  private readonly clock: () => number;

  constructor(rules: readonly RouteRuleConfig[] = [], options: RouterOptions = {}) {
    super();
    this.random = options.random ?? Math.random;
    this.knowsUpstream = options.knowsUpstream;
    this.clock = options.clock ?? Date.now;
    this.setRules(rules);
  }

  /** The first matching rule's candidates, or undefined when no rule matches (the caller fails the message). */
  candidates(msg: RouteInput): RouteChoice | undefined {
    const rules = this.ordered;
    for (let i = 0; i < rules.length; i++) if (rules[i].matches(msg)) return rules[i].choose(this.random);
    return undefined;
  }

  /**
   * Replaces the rules (config reload). Overrides of rules that still exist are kept, so a reload does not undo an
   * operator's switch. Invalid rules throw and leave the current rules in place.
   */
  setRules(configs: readonly RouteRuleConfig[]): void {
    const next: RouteRule[] = [];
    const byId = new Map<string, RouteRule>();
    for (const c of configs) {
      if (byId.has(c.id)) throw new RoutingError('INVALID_RULE', `rule id ${c.id} is used twice`);
      const rule = new RouteRule(c);
      const old = this.byId.get(c.id);
      if (old) {
        rule.switches = old.switches;
        if (old.override !== null) rule.setOverride(old.override);
      }
      byId.set(c.id, rule);
      next.push(rule);
    }
    this.ordered = next;
    this.byId = byId;
  }

  /** Moves the rule's traffic to `upstreamId` (configured upstreams stay behind it as failover). */
  switchRoute(ruleId: string, upstreamId: string, origin = 'admin'): SwitchResult {
    if (this.knowsUpstream && !this.knowsUpstream(upstreamId)) throw new RoutingError('UNKNOWN_UPSTREAM', `no upstream ${upstreamId}`);
    return this.apply(this.rule(ruleId), upstreamId, origin);
  }

  /** Returns the rule to its configured candidates. */
  clearSwitch(ruleId: string, origin = 'admin'): SwitchResult {
    return this.apply(this.rule(ruleId), null, origin);
  }

  /** Current overrides by rule id, for persistence. */
  overrides(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const r of this.ordered) if (r.override !== null) out[r.id] = r.override;
    return out;
  }

  /**
   * Applies stored or broadcast overrides (rule id → upstream, or null to clear). Unknown rules are skipped (a
   * stored switch may outlive its rule); unchanged ones emit nothing. Returns the rule ids that changed.
   */
  applyOverrides(overrides: Record<string, string | null>, origin = 'restore'): string[] {
    const changed: string[] = [];
    for (const [ruleId, upstreamId] of Object.entries(overrides)) {
      const rule = this.byId.get(ruleId);
      if (!rule || rule.override === upstreamId) continue;
      this.apply(rule, upstreamId, origin);
      changed.push(ruleId);
    }
    return changed;
  }

  /** Subscribes to switches; returns the unsubscribe function. */
  onSwitch(listener: (event: RouteSwitchEvent) => void): () => void {
    this.on('switch', listener);
    return () => this.off('switch', listener);
  }

  rules(): RouteRuleView[] {
    return this.ordered.map((r) => r.view());
  }

  rule(ruleId: string): RouteRule {
    const rule = this.byId.get(ruleId);
    if (!rule) throw new RoutingError('UNKNOWN_RULE', `no routing rule ${ruleId}`);
    return rule;
  }

  /** Every upstream id any rule names, e.g. to warn about rules pointing at upstreams that are not configured. */
  referencedUpstreams(): Set<string> {
    const out = new Set<string>();
    for (const r of this.ordered) {
      for (const u of r.upstreams) out.add(u);
      if (r.override !== null) out.add(r.override);
    }
    return out;
  }

  private apply(rule: RouteRule, to: string | null, origin: string): SwitchResult {
    const previousOverride = rule.override;
    const before = rule.effective();
    rule.setOverride(to);
    rule.switches++;
    const after = rule.effective();
    this.emit('switch', { ruleId: rule.id, to, previousOverride, before, after, origin, at: this.clock() });
    return { ruleId: rule.id, previousOverride, before, after };
  }
}
