import type { Logger } from 'pino';
import type { NewEvent } from '../../events/event-outbox.js';
import type { Db, Queryable } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { describeClient, type ClickClient } from './click-info.js';
import type { LinkStore } from './link-store.js';

/** A click as the redirect hands it over: the raw request facts, analysed when the batch is written. */
export interface ClickFacts {
  linkId: string;
  accountId: string;
  slug: string;
  at: number;
  method: 'GET' | 'HEAD';
  /** redirected (to the destination), expired (limit or expiry: expiredUrl or 410). */
  outcome: 'redirected' | 'expired';
  /** Redis mode: the link's click counter after this click took one. */
  used: number | null;
  /** The client address (after trusted proxies); never stored, only its country. */
  ip: string | null;
  userAgent: string | undefined;
  referer: string | undefined;
}

type Click = Omit<ClickFacts, 'ip' | 'userAgent' | 'referer'> & Omit<ClickClient, 'platform'> & { id: string };

export const ROLLUP_DIMS = ['country', 'device', 'browser', 'os', 'referrer'] as const;
export type RollupDim = (typeof ROLLUP_DIMS)[number];

const HOUR = 3_600_000;

export interface ClickRecorderDeps {
  db: Db;
  store: LinkStore;
  /** Writes shortlink.click events in the batch's transaction (ctx.events), and says which accounts receive them. */
  events: { insertMany(q: Queryable, events: readonly NewEvent[]): Promise<number>; subscribed(q: Queryable, accountIds: string[]): Promise<Set<string>> };
  /** Wakes webhook delivery after events were written. */
  onEvents(): void;
  batchMs: number;
  batchMax: number;
  log: Logger;
  onFlushed?(clicks: number): void;
}

/**
 * Clicks are kept in memory and written every `batchMs` (or at `batchMax`), one transaction per batch: the raw clicks
 * (append-only), the hourly rollups analytics read, the click counters' floor and the shortlink.click events. The
 * redirect never waits for any of it. A crash loses the clicks of the batch window not yet written (at most
 * batchMs of clicks); a failed write is retried with the next batch, bounded so memory cannot grow without end.
 */
export class ClickRecorder {
  private pending: Array<ClickFacts & { id: string }> = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private stopped = false;
  private static readonly MAX_HELD = 200_000;

  constructor(private readonly d: ClickRecorderDeps) {}

  record(c: ClickFacts): void {
    if (this.pending.length >= ClickRecorder.MAX_HELD) {
      this.d.log.warn('short link click backlog full (storage failing?): click dropped');
      return;
    }
    this.pending.push({ ...c, id: newId('clk_', c.at) });
    if (this.pending.length >= this.d.batchMax) void this.flush();
    else if (!this.timer && !this.stopped) this.timer = setTimeout(() => void this.flush(), this.d.batchMs);
  }

  /** Writes what is waiting (and waits for a write in progress). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.flushing) await this.flushing;
    if (!this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.write(batch)
      .then(() => this.d.onFlushed?.(batch.length))
      .catch((err: Error) => {
        this.d.log.error({ err: err.message, clicks: batch.length }, 'short link clicks not written; retrying with the next batch');
        this.pending = batch.concat(this.pending);
        if (!this.timer && !this.stopped) this.timer = setTimeout(() => void this.flush(), this.d.batchMs);
      })
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.flush();
  }

  /**
   * The accounts of the batch with an enabled endpoint taking shortlink.click (the outbox's own filter, asked once per
   * batch): events nobody receives are not even built, which on embedded storage was half the cost of a batch.
   */
  private async subscribedAccounts(accounts: string[]): Promise<Set<string>> {
    return this.d.events.subscribed(this.d.db, accounts);
  }

  private async write(facts: Array<ClickFacts & { id: string }>): Promise<void> {
    const batch: Click[] = facts.map(({ ip, userAgent, referer, ...c }) => {
      const { platform: _platform, ...client } = describeClient(ip, userAgent, referer);
      return { ...c, ...client };
    });
    const rollups = new Map<string, { link: string; account: string; hour: number; dim: string; value: string; bot: boolean; n: number }>();
    const add = (c: Click, dim: string, value: string) => {
      const hour = Math.floor(c.at / HOUR) * HOUR;
      const k = `${c.linkId}\u0000${hour}\u0000${dim}\u0000${value}\u0000${c.bot}`;
      const r = rollups.get(k);
      if (r) r.n++;
      else rollups.set(k, { link: c.linkId, account: c.accountId, hour, dim, value, bot: c.bot, n: 1 });
    };
    const used = new Map<string, number>();
    for (const c of batch) {
      // Analytics count clicks that reached the destination; HEAD requests are recorded raw but never counted.
      if (c.method === 'GET' && c.outcome === 'redirected') {
        add(c, 'total', '');
        for (const dim of ROLLUP_DIMS) add(c, dim, c[dim] ?? '');
      }
      if (c.used !== null) used.set(c.linkId, Math.max(used.get(c.linkId) ?? 0, c.used));
    }
    const rows = [...rollups.values()];
    const subscribed = await this.subscribedAccounts([...new Set(batch.map((c) => c.accountId))]);
    const events: NewEvent[] = batch
      .filter((c) => c.method === 'GET' && subscribed.has(c.accountId))
      .map((c) => ({
        accountId: c.accountId,
        type: 'shortlink.click',
        messageKey: c.linkId,
        data: {
          clickId: c.id,
          linkId: c.linkId,
          slug: c.slug,
          at: new Date(c.at).toISOString(),
          outcome: c.outcome,
          country: c.country,
          device: c.device,
          browser: c.browser,
          os: c.os,
          referrer: c.referrer,
          bot: c.bot,
        },
      }));
    let stored = 0;
    await this.d.db.tx(async (q) => {
      // One JSON parameter: on embedded storage a dozen array parameters cost several times the insert itself.
      const s1 = q.query(
        `INSERT INTO shortlink_clicks (id, link_id, account_id, at, country, device, browser, os, referrer, bot, method, outcome)
         SELECT u.id, u.l, u.a, to_timestamp(u.t / 1000.0), u.c, u.d, u.b, u.o, u.r, u.bot, u.m, u.x
         FROM json_to_recordset($1::json) AS u(id text, l text, a text, t float8, c text, d text, b text, o text, r text, bot bool, m text, x text)
         ON CONFLICT (link_id, id, at) DO NOTHING`,
        [JSON.stringify(batch.map((c) => ({ id: c.id, l: c.linkId, a: c.accountId, t: c.at, c: c.country, d: c.device, b: c.browser, o: c.os, r: c.referrer, bot: c.bot, m: c.method, x: c.outcome })))],
      );
      const s2 = rows.length
        ? q.query(
            `INSERT INTO shortlink_rollups (link_id, account_id, hour, dim, value, bot, clicks)
             SELECT u.link_id, u.account_id, to_timestamp(u.hour / 1000.0), u.dim, u.value, u.bot, u.n
             FROM unnest($1::text[], $2::text[], $3::float8[], $4::text[], $5::text[], $6::bool[], $7::bigint[]) AS u(link_id, account_id, hour, dim, value, bot, n)
             ON CONFLICT (link_id, hour, dim, value, bot) DO UPDATE SET clicks = shortlink_rollups.clicks + EXCLUDED.clicks`,
            [rows.map((r) => r.link), rows.map((r) => r.account), rows.map((r) => r.hour), rows.map((r) => r.dim), rows.map((r) => r.value), rows.map((r) => r.bot), rows.map((r) => r.n)],
          )
        : null;
      const s3 = this.d.store.recordUsed(q, [...used.keys()], [...used.values()]);
      const s4 = this.d.events.insertMany(q, events);
      // Every statement settles before the callback throws (the Db.tx contract).
      const settled = await Promise.allSettled([s1, s2, s3, s4]);
      for (const r of settled) if (r.status === 'rejected') throw r.reason;
      stored = await s4;
    });
    if (stored > 0) this.d.onEvents();
  }
}
