import type { Db, Queryable } from '../../store/types.js';
import type { Link, Utm } from './link.js';

interface LinkRow {
  id: string;
  account_id: string;
  slug: string;
  url: string;
  title: string | null;
  tags: string[];
  external_id: string | null;
  utm: Utm | string;
  password_hash: string | null;
  expires_at: Date | string | null;
  expired_url: string | null;
  max_clicks: number | null;
  used_clicks: number;
  ios_url: string | null;
  android_url: string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS = `id, account_id, slug, url, title, tags, external_id, utm, password_hash, expires_at, expired_url, max_clicks,
  used_clicks, ios_url, android_url, created_at, updated_at`;

function toLink(r: LinkRow): Link {
  return {
    id: r.id,
    accountId: r.account_id,
    slug: r.slug,
    url: r.url,
    title: r.title,
    tags: r.tags ?? [],
    externalId: r.external_id,
    utm: typeof r.utm === 'string' ? (JSON.parse(r.utm) as Utm) : r.utm,
    passwordHash: r.password_hash,
    expiresAt: r.expires_at === null ? null : new Date(r.expires_at),
    expiredUrl: r.expired_url,
    maxClicks: r.max_clicks,
    usedClicks: Number(r.used_clicks),
    ios: r.ios_url,
    android: r.android_url,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

/** The fields a create or update writes (everything but ids, counters and times). */
export type LinkFields = Pick<Link, 'url' | 'title' | 'tags' | 'externalId' | 'utm' | 'passwordHash' | 'expiresAt' | 'expiredUrl' | 'maxClicks' | 'ios' | 'android'>;

export interface ListFilter {
  tag?: string;
  search?: string;
  /** Links with an id below this (ids are time-sortable: newest first). */
  before?: string;
  limit: number;
}

/** Short links in SQL: the one source of truth every redirect instance caches from. */
export class LinkStore {
  constructor(private readonly db: Db) {}

  /** Inserts; 'slug' or 'externalId' when that unique value is taken (nothing written). */
  async insert(id: string, accountId: string, slug: string, f: LinkFields): Promise<Link | 'slug' | 'externalId'> {
    const r = await this.db.query<LinkRow>(
      `INSERT INTO shortlink_links (id, account_id, slug, url, title, tags, external_id, utm, password_hash, expires_at, expired_url,
         max_clicks, ios_url, android_url)
       VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8::jsonb, $9, $10, $11, $12, $13, $14)
       ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`,
      [id, accountId, slug, f.url, f.title, f.tags, f.externalId, JSON.stringify(f.utm), f.passwordHash, f.expiresAt, f.expiredUrl, f.maxClicks, f.ios, f.android],
    );
    if (r.rows[0]) return toLink(r.rows[0]);
    return (await this.bySlug(slug)) ? 'slug' : 'externalId';
  }

  async get(accountId: string, id: string): Promise<Link | null> {
    const r = await this.db.query<LinkRow>(`SELECT ${COLUMNS} FROM shortlink_links WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return r.rows[0] ? toLink(r.rows[0]) : null;
  }

  async bySlug(slug: string): Promise<Link | null> {
    const r = await this.db.query<LinkRow>(`SELECT ${COLUMNS} FROM shortlink_links WHERE slug = $1`, [slug]);
    return r.rows[0] ? toLink(r.rows[0]) : null;
  }

  async externalIdTaken(accountId: string, externalId: string, exceptId: string | null): Promise<boolean> {
    const r = await this.db.query(`SELECT 1 FROM shortlink_links WHERE account_id = $1 AND external_id = $2 AND id IS DISTINCT FROM $3`, [accountId, externalId, exceptId]);
    return r.rowCount > 0;
  }

  /** Newest first, one page; `search` matches slug, title or destination. */
  async list(accountId: string, f: ListFilter): Promise<Link[]> {
    const params: unknown[] = [accountId];
    const where = ['account_id = $1'];
    if (f.tag !== undefined) where.push(`$${params.push(f.tag)} = ANY(tags)`);
    if (f.search !== undefined) {
      const n = params.push(`%${f.search.replace(/[\\%_]/g, (c) => '\\' + c)}%`);
      where.push(`(slug ILIKE $${n} OR title ILIKE $${n} OR url ILIKE $${n})`);
    }
    if (f.before !== undefined) where.push(`id < $${params.push(f.before)}`);
    const r = await this.db.query<LinkRow>(`SELECT ${COLUMNS} FROM shortlink_links WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.push(f.limit)}`, params);
    return r.rows.map(toLink);
  }

  /** Replaces the writable fields (and the slug); 'slug'/'externalId' on a unique clash; null when there is no such link. */
  async update(accountId: string, id: string, slug: string, f: LinkFields): Promise<Link | 'slug' | 'externalId' | null> {
    try {
      const r = await this.db.query<LinkRow>(
        `UPDATE shortlink_links SET slug = $3, url = $4, title = $5, tags = $6::text[], external_id = $7, utm = $8::jsonb, password_hash = $9,
           expires_at = $10, expired_url = $11, max_clicks = $12, ios_url = $13, android_url = $14, updated_at = now()
         WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
        [id, accountId, slug, f.url, f.title, f.tags, f.externalId, JSON.stringify(f.utm), f.passwordHash, f.expiresAt, f.expiredUrl, f.maxClicks, f.ios, f.android],
      );
      return r.rows[0] ? toLink(r.rows[0]) : null;
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err;
      const other = await this.bySlug(slug);
      return other && other.id !== id ? 'slug' : 'externalId';
    }
  }

  /** Deletes the link (its clicks and rollups stay for the account's analytics); the deleted row, or null. */
  async delete(accountId: string, id: string): Promise<Link | null> {
    const r = await this.db.query<LinkRow>(`DELETE FROM shortlink_links WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`, [id, accountId]);
    return r.rows[0] ? toLink(r.rows[0]) : null;
  }

  /**
   * Embedded click limit: one conditional UPDATE, so concurrent redirects cannot both take the last click. The new
   * count, or null when the limit is used up.
   */
  async consumeClick(id: string): Promise<number | null> {
    const r = await this.db.query<{ used_clicks: number }>(
      `UPDATE shortlink_links SET used_clicks = used_clicks + 1 WHERE id = $1 AND used_clicks < max_clicks RETURNING used_clicks`,
      [id],
    );
    return r.rows[0] ? Number(r.rows[0].used_clicks) : null;
  }

  /** Redis mode: the counter values seen, written back as the floor for a lost key (never lowers it). */
  async recordUsed(q: Queryable, ids: readonly string[], used: readonly number[]): Promise<void> {
    if (!ids.length) return;
    await q.query(
      `UPDATE shortlink_links l SET used_clicks = GREATEST(l.used_clicks, u.used)
       FROM unnest($1::text[], $2::int[]) AS u(id, used) WHERE l.id = u.id`,
      [ids, used],
    );
  }
}
