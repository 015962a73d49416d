import { hashPassword } from '../../security/secrets.js';
import type { Db } from '../../store/types.js';
import { idTime, newId } from '../../util/ids.js';
import type { ClickLimiter } from './click-limiter.js';
import type { ClickRecorder, RollupDim } from './click-recorder.js';
import type { Link, Utm } from './link.js';
import type { LinkCache } from './link-cache.js';
import type { LinkFields, LinkStore } from './link-store.js';
import { chosenSlugProblem, generateSlug } from './slugs.js';

export interface FieldProblem {
  field: string;
  message: string;
}

/** What a create or update may say; on update an absent field stays, null clears it. */
export interface LinkInput {
  url?: string;
  slug?: string;
  title?: string | null;
  tags?: string[];
  externalId?: string | null;
  utm?: Utm;
  password?: string | null;
  expiresAt?: string | null;
  expiredUrl?: string | null;
  maxClicks?: number | null;
  ios?: string | null;
  android?: string | null;
}

export type LinkResult = { ok: true; link: Link } | { ok: false; code: 'VALIDATION_ERROR'; errors: FieldProblem[] } | { ok: false; code: 'SLUG_TAKEN' | 'EXTERNAL_ID_TAKEN' | 'DESTINATION_DENIED' | 'SHORTLINK_NOT_FOUND'; message?: string };

/** Decides whether a destination may be linked to: null = fine, else why not (the deny-list hook). */
export type DestinationPolicy = (url: URL) => string | null | Promise<string | null>;

export const MAX_URL_LENGTH = 2048;
const SLUG_ATTEMPTS = 8;

/** A deny-list of hosts (each with its subdomains), the default policy. */
export function denyHostsPolicy(list: string): DestinationPolicy {
  const hosts = list.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
  return (u) => {
    const host = u.hostname.toLowerCase();
    return hosts.some((h) => host === h || host.endsWith(`.${h}`)) ? `links to ${host} are not allowed` : null;
  };
}

export interface AnalyticsQuery {
  linkId?: string;
  groupBy: 'time' | RollupDim;
  interval: 'hour' | 'day';
  from: Date;
  to: Date;
  includeBots: boolean;
}

export interface RawClick {
  id: string;
  at: Date;
  country: string | null;
  device: string;
  browser: string | null;
  os: string | null;
  referrer: string | null;
  bot: boolean;
  method: string;
  outcome: string;
}

/** Short links: CRUD with their rules, the analytics reads, and the redirect's parts (cache, limiter, recorder). */
export class ShortlinkService {
  /** The public address shortUrl starts with (set when the redirect listener is up, unless configured). */
  baseUrl = '';
  /** Where the redirect listener is bound (http://host:port). */
  redirectAddress = '';
  /** The deny-list hook: replace or wrap it to add a reputation check. */
  destinationPolicy: DestinationPolicy;

  constructor(
    /** The analytics' reads (rollups, raw clicks): the read replica when database.readUrl is set; links are read from `store`. */
    private readonly analyticsDb: Db,
    readonly store: LinkStore,
    readonly cache: LinkCache,
    readonly limiter: ClickLimiter,
    readonly recorder: ClickRecorder,
    denyHosts: string,
  ) {
    this.destinationPolicy = denyHostsPolicy(denyHosts);
  }

  shortUrl(link: Link): string {
    return `${this.baseUrl}/${link.slug}`;
  }

  private async checkUrl(field: string, value: string, errors: FieldProblem[], policy: boolean): Promise<string | null> {
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      errors.push({ field, message: 'must be an absolute http or https URL' });
      return null;
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) {
      errors.push({ field, message: 'must be an absolute http or https URL' });
      return null;
    }
    if (u.username || u.password) {
      errors.push({ field, message: 'must not carry credentials' });
      return null;
    }
    if (!policy) return null;
    // A destination on the short link address itself would chain or loop redirects past every limit.
    if (this.baseUrl && u.host === new URL(this.baseUrl).host) return 'it is a short link address itself';
    return await this.destinationPolicy(u);
  }

  /** Validates and merges the input onto `base` (a create starts from nothing). */
  private async fields(input: LinkInput, base: Link | null): Promise<{ errors: FieldProblem[]; denied: string | null; fields: LinkFields; slug: string | null }> {
    const errors: FieldProblem[] = [];
    let denied: string | null = null;
    for (const f of ['url', 'expiredUrl', 'ios', 'android'] as const) {
      const v = input[f];
      if (typeof v === 'string') denied ??= await this.checkUrl(f, v, errors, true);
    }
    let slug: string | null = null;
    if (input.slug !== undefined && input.slug !== base?.slug) {
      const why = chosenSlugProblem(input.slug);
      if (why) errors.push({ field: 'slug', message: why });
      slug = input.slug;
    }
    let expiresAt = base?.expiresAt ?? null;
    if (input.expiresAt !== undefined) {
      expiresAt = input.expiresAt === null ? null : new Date(input.expiresAt);
      if (expiresAt && Number.isNaN(expiresAt.getTime())) errors.push({ field: 'expiresAt', message: 'must be a date-time' });
      // A new link that is already expired is a mistake (a time zone, a past year); an update may expire a link now.
      else if (expiresAt && !base && expiresAt.getTime() <= Date.now()) errors.push({ field: 'expiresAt', message: 'must be in the future' });
    }
    const pick = <K extends keyof LinkInput & keyof Link>(k: K, dflt: Link[K]): Link[K] => (input[k] !== undefined ? (input[k] as Link[K]) : base ? base[k] : dflt);
    let passwordHash = base?.passwordHash ?? null;
    if (input.password !== undefined) passwordHash = input.password === null ? null : await hashPassword(input.password);
    const fields: LinkFields = {
      url: input.url ?? base?.url ?? '',
      title: pick('title', null),
      tags: pick('tags', []),
      externalId: pick('externalId', null),
      utm: input.utm !== undefined ? input.utm : (base?.utm ?? {}),
      passwordHash,
      expiresAt,
      expiredUrl: pick('expiredUrl', null),
      maxClicks: pick('maxClicks', null),
      ios: pick('ios', null),
      android: pick('android', null),
    };
    return { errors, denied, fields, slug };
  }

  async create(accountId: string, input: LinkInput & { url: string }): Promise<LinkResult> {
    const { errors, denied, fields, slug } = await this.fields(input, null);
    if (errors.length) return { ok: false, code: 'VALIDATION_ERROR', errors };
    if (denied) return { ok: false, code: 'DESTINATION_DENIED', message: `The destination is refused: ${denied}` };
    if (fields.externalId !== null && (await this.store.externalIdTaken(accountId, fields.externalId, null))) return { ok: false, code: 'EXTERNAL_ID_TAKEN' };
    const id = newId('lnk_');
    // A generated slug that collides (rare: 56^7 of them) is drawn again; a chosen one is the caller's to change.
    for (let i = 0; i < (slug === null ? SLUG_ATTEMPTS : 1); i++) {
      const s = slug ?? generateSlug(i < SLUG_ATTEMPTS / 2 ? 7 : 8);
      const r = await this.store.insert(id, accountId, s, fields);
      if (typeof r !== 'string') {
        // A miss for this slug may be cached (someone tried it before it existed).
        await this.cache.invalidate(r.slug);
        return { ok: true, link: r };
      }
      if (r === 'externalId') return { ok: false, code: 'EXTERNAL_ID_TAKEN' };
    }
    return { ok: false, code: 'SLUG_TAKEN' };
  }

  get(accountId: string, id: string): Promise<Link | null> {
    return this.store.get(accountId, id);
  }

  list(accountId: string, f: { tag?: string; search?: string; before?: string; limit: number }): Promise<Link[]> {
    return this.store.list(accountId, f);
  }

  async update(accountId: string, id: string, input: LinkInput): Promise<LinkResult> {
    const base = await this.store.get(accountId, id);
    if (!base) return { ok: false, code: 'SHORTLINK_NOT_FOUND' };
    const { errors, denied, fields, slug } = await this.fields(input, base);
    if (errors.length) return { ok: false, code: 'VALIDATION_ERROR', errors };
    if (denied) return { ok: false, code: 'DESTINATION_DENIED', message: `The destination is refused: ${denied}` };
    if (fields.externalId !== null && (await this.store.externalIdTaken(accountId, fields.externalId, id))) return { ok: false, code: 'EXTERNAL_ID_TAKEN' };
    const r = await this.store.update(accountId, id, slug ?? base.slug, fields);
    if (r === null) return { ok: false, code: 'SHORTLINK_NOT_FOUND' };
    if (r === 'slug') return { ok: false, code: 'SLUG_TAKEN' };
    if (r === 'externalId') return { ok: false, code: 'EXTERNAL_ID_TAKEN' };
    await this.cache.invalidate(...new Set([base.slug, r.slug]));
    return { ok: true, link: r };
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const r = await this.store.delete(accountId, id);
    if (!r) return false;
    await this.cache.invalidate(r.slug);
    await this.limiter.reset(r.id);
    return true;
  }

  /** `total` (clicks that reached the destination in the range) beside the groups. */
  async analytics(accountId: string, q: AnalyticsQuery): Promise<{ total: number; groups: Array<{ key: string; clicks: number }> }> {
    const params: unknown[] = [accountId, q.from, q.to];
    let where = `account_id = $1 AND hour >= date_trunc('hour', $2::timestamptz) AND hour < $3::timestamptz`;
    if (q.linkId) where += ` AND link_id = $${params.push(q.linkId)}`;
    if (!q.includeBots) where += ' AND NOT bot';
    const totalQ = this.analyticsDb.query<{ n: string | null }>(`SELECT sum(clicks)::text AS n FROM shortlink_rollups WHERE ${where} AND dim = 'total'`, params);
    let groupsQ;
    if (q.groupBy === 'time') {
      const unit = q.interval === 'day' ? 'day' : 'hour';
      groupsQ = this.analyticsDb.query<{ key: Date | string; n: string }>(
        `SELECT date_trunc('${unit}', hour) AS key, sum(clicks)::text AS n FROM shortlink_rollups WHERE ${where} AND dim = 'total' GROUP BY 1 ORDER BY 1`,
        params,
      );
    } else {
      groupsQ = this.analyticsDb.query<{ key: string; n: string }>(
        `SELECT value AS key, sum(clicks)::text AS n FROM shortlink_rollups WHERE ${where} AND dim = $${params.length + 1} GROUP BY 1 ORDER BY sum(clicks) DESC, 1 LIMIT 250`,
        [...params, q.groupBy],
      );
    }
    const [total, groups] = await Promise.all([totalQ, groupsQ]);
    return {
      total: Number(total.rows[0]?.n ?? 0),
      groups: groups.rows.map((r) => ({ key: r.key instanceof Date ? r.key.toISOString() : q.groupBy === 'time' ? new Date(r.key).toISOString() : r.key, clicks: Number(r.n) })),
    };
  }

  /**
   * The raw clicks of a link, newest first, before a click id (the cursor). A click id carries the click's time, so a
   * page after the first skips the partitions newer than its cursor.
   */
  async clicks(accountId: string, linkId: string, before: string | undefined, limit: number): Promise<RawClick[]> {
    const until = before === undefined ? null : clickIdTime(before);
    const params: unknown[] = [linkId, accountId, before ?? null, limit];
    if (until !== null) params.push(new Date(until + CLICK_TIME_SLACK_MS).toISOString());
    const r = await this.analyticsDb.query<RawClick & { at: Date | string }>(
      `SELECT id, at, country, device, browser, os, referrer, bot, method, outcome FROM shortlink_clicks
       WHERE link_id = $1 AND account_id = $2 AND ($3::text IS NULL OR id < $3)${until === null ? '' : ' AND at < $5::timestamptz'} ORDER BY id DESC LIMIT $4`,
      params,
    );
    return r.rows.map((c) => ({ ...c, at: new Date(c.at) }));
  }
}

/** Rounding between the id's milliseconds and the stored timestamptz, with room to spare. */
const CLICK_TIME_SLACK_MS = 1000;

/** The time a click id carries (newId('clk_', at): epoch ms), or null for another id (the cursor then bounds nothing). */
export function clickIdTime(id: string): number | null {
  return idTime('clk_', id);
}
