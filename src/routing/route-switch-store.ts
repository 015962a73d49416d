import type { Logger } from 'pino';
import type { Db } from '../store/types.js';
import type { Router, RouteSwitchEvent } from './router.js';

export interface RouteSwitchStoreOptions {
  /** How often `sync()` is meant to run to pick up other instances' switches (default 2000 ms). */
  pollMs?: number;
}

const KEY = 'routing.overrides';

// One rule per statement, merged into the stored map, so two instances switching different rules at the same
// moment do not overwrite each other's switch (writing the whole local map would).
const SET_SQL = `INSERT INTO settings (key, value) VALUES ($1, jsonb_build_object($2::text, $3::text))
  ON CONFLICT (key) DO UPDATE SET value = settings.value || EXCLUDED.value, updated_at = now()`;
const CLEAR_SQL = `UPDATE settings SET value = value - $2::text, updated_at = now() WHERE key = $1`;

/**
 * Keeps route switches across restarts and in step between instances sharing a database: local switches are
 * written to the settings row `routing.overrides` (rule id → upstream id); every `pollMs` `sync()` reads the row and
 * applies any difference to the router with origin 'remote' (a rule switched here but absent there is cleared). The
 * SMS module runs `sync()` as its instance job `sms.route-switches`.
 * Counting switches is UpstreamMetrics.observeRouter's job; this logs each one.
 */
export class RouteSwitchStore {
  readonly pollMs: number;
  /** Local changes not yet stored; a later change of the same rule replaces an earlier one. */
  private readonly pending = new Map<string, string | null>();
  /** Bumped on every local change, so a poll whose read started before it does not undo it. */
  private generation = 0;
  private chain: Promise<void> = Promise.resolve();
  private unsubscribe: (() => void) | null = null;
  private polling: Promise<void> | null = null;
  private failing = false;
  private running = false;

  constructor(
    private readonly db: Db,
    private readonly router: Router,
    private readonly log: Logger,
    opts: RouteSwitchStoreOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 2000;
  }

  /** Applies the stored overrides (origin 'restore'); call once at start-up, before traffic. Returns the rules changed. */
  async restore(): Promise<string[]> {
    const stored = await this.read();
    const changed = this.router.applyOverrides(stored, 'restore');
    if (changed.length) this.log.info({ rules: changed }, 'route switches restored');
    return changed;
  }

  /** Starts storing local switches; from now on `sync()` follows the other instances'. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.router.onSwitch(this.onSwitch);
  }

  /**
   * Stores pending local switches, then applies the other instances' (every pollMs, by the scheduler). Never throws:
   * a database that cannot be reached is logged once per outage, not once per poll. No-op unless started.
   */
  sync(): Promise<void> {
    if (!this.running) return Promise.resolve();
    this.polling ??= this.poll()
      .then(() => {
        if (this.failing) this.log.info('route switch store: database reachable again');
        this.failing = false;
      })
      .catch((err: Error) => {
        if (!this.failing) this.log.warn({ err: err.message, pending: this.pending.size }, 'route switch store: cannot read or write route switches; retrying');
        this.failing = true;
      })
      .finally(() => {
        this.polling = null;
      });
    return this.polling;
  }

  /** Stores pending local switches now; rejects when the database refused (they stay pending and are retried). */
  flush(): Promise<void> {
    const run = this.chain.then(() => this.writePending());
    this.chain = run.catch(() => {});
    return run;
  }

  /** Stops following and listening; pending switches get one last attempt to be stored. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.unsubscribe?.();
    this.unsubscribe = null;
    await this.polling;
    await this.flush().catch((err: Error) => this.log.warn({ err: err.message, rules: [...this.pending.keys()] }, 'route switches not stored at shutdown'));
  }

  private readonly onSwitch = (e: RouteSwitchEvent): void => {
    this.log.info({ rule: e.ruleId, from: e.previousOverride, to: e.to, origin: e.origin, effective: e.after }, e.to === null ? 'route switch cleared' : 'route switched');
    if (e.origin === 'restore' || e.origin === 'remote') return;
    this.pending.set(e.ruleId, e.to);
    this.generation++;
    // Errors are retried by the next poll, which stores pending changes before it reads.
    this.flush().catch(() => {});
  };

  private async writePending(): Promise<void> {
    if (!this.pending.size) return;
    const batch = [...this.pending];
    await this.db.tx(async (q) => {
      for (const [rule, to] of batch) await q.query(to === null ? CLEAR_SQL : SET_SQL, to === null ? [KEY, rule] : [KEY, rule, to]);
    });
    for (const [rule, to] of batch) if (this.pending.get(rule) === to) this.pending.delete(rule);
  }

  private async read(): Promise<Record<string, string>> {
    const { rows } = await this.db.query<{ value: unknown }>(`SELECT value FROM settings WHERE key = $1`, [KEY]);
    const value = rows[0]?.value;
    const out: Record<string, string> = {};
    if (!value || typeof value !== 'object' || Array.isArray(value)) return out;
    for (const [rule, up] of Object.entries(value as Record<string, unknown>)) if (typeof up === 'string') out[rule] = up;
    return out;
  }

  private async poll(): Promise<void> {
    if (this.pending.size) await this.flush();
    const generation = this.generation;
    const stored = await this.read();
    // A local switch happened while reading: the row may predate it; the next poll sees it stored.
    if (generation !== this.generation || this.pending.size) return;
    const local = this.router.overrides();
    const diff: Record<string, string | null> = {};
    for (const [rule, up] of Object.entries(stored)) if (local[rule] !== up) diff[rule] = up;
    for (const rule of Object.keys(local)) if (!(rule in stored)) diff[rule] = null;
    if (Object.keys(diff).length) this.router.applyOverrides(diff, 'remote');
  }
}
