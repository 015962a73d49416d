import { createHash, timingSafeEqual } from 'node:crypto';
import type { Db, Queryable } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import type { AppDialect, MenuTree } from './menu-tree.js';
import { claimCandidates } from './service-code.js';

export interface MenuRow {
  id: string;
  accountId: string;
  name: string;
  publishedVersion: number | null;
  latestVersion: number;
  createdAt: number;
  updatedAt: number;
}

export interface MenuVersion {
  version: number;
  createdAt: number;
  publishedAt: number | null;
}

export interface ServiceCodeRow {
  id: string;
  accountId: string;
  code: string;
  menuId: string | null;
  webhookUrl: string | null;
  dialect: AppDialect;
  createdAt: number;
}

export interface ConnectorRow {
  id: string;
  accountId: string;
  dialect: 'africastalking' | 'hubtel';
  hasSecret: boolean;
  allowIps: string[];
  createdAt: number;
}

const menuCols = `id, account_id AS "accountId", name, published_version AS "publishedVersion", latest_version AS "latestVersion",
  created_at::float8 AS "createdAt", updated_at::float8 AS "updatedAt"`;
const codeCols = `id, account_id AS "accountId", code, menu_id AS "menuId", webhook_url AS "webhookUrl", dialect, created_at::float8 AS "createdAt"`;
const connectorCols = `id, account_id AS "accountId", dialect, secret_hash IS NOT NULL AS "hasSecret", allow_ips AS "allowIps", created_at::float8 AS "createdAt"`;

export class ServiceCodeTakenError extends Error {
  override readonly name = 'ServiceCodeTakenError';
}

/** Serialises claims across instances (pg_advisory_xact_lock key). */
const CLAIM_LOCK = 7_246_038;

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** Menus and their versions, claimed service codes, and aggregator connectors: the USSD configuration, in SQL. */
export class UssdStore {
  constructor(
    private readonly db: Db,
    private readonly clock: () => number,
  ) {}

  // ------------------------------------------------------------ menus

  async createMenu(accountId: string, name: string, tree: MenuTree): Promise<MenuRow> {
    const id = newId('menu_');
    const now = this.clock();
    return this.db.tx(async (q) => {
      const { rows } = await q.query<MenuRow>(
        `INSERT INTO ussd_menus (id, account_id, name, latest_version, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $4) RETURNING ${menuCols}`,
        [id, accountId, name, now],
      );
      await q.query(`INSERT INTO ussd_menu_versions (menu_id, version, tree, created_at) VALUES ($1, 1, $2, $3)`, [id, JSON.stringify(tree), now]);
      return rows[0];
    });
  }

  /** A new draft version (the live one is untouched until it is published). */
  async updateMenu(accountId: string, id: string, patch: { name?: string; tree?: MenuTree }): Promise<MenuRow | null> {
    const now = this.clock();
    return this.db.tx(async (q) => {
      const { rows } = await q.query<MenuRow>(
        `UPDATE ussd_menus SET name = coalesce($3, name), latest_version = latest_version + $4, updated_at = $5
          WHERE id = $1 AND account_id = $2 RETURNING ${menuCols}`,
        [id, accountId, patch.name ?? null, patch.tree ? 1 : 0, now],
      );
      if (!rows[0]) return null;
      if (patch.tree) await q.query(`INSERT INTO ussd_menu_versions (menu_id, version, tree, created_at) VALUES ($1, $2, $3, $4)`, [id, rows[0].latestVersion, JSON.stringify(patch.tree), now]);
      return rows[0];
    });
  }

  async menu(accountId: string, id: string): Promise<MenuRow | null> {
    const { rows } = await this.db.query<MenuRow>(`SELECT ${menuCols} FROM ussd_menus WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] ?? null;
  }

  async menus(accountId: string): Promise<MenuRow[]> {
    return (await this.db.query<MenuRow>(`SELECT ${menuCols} FROM ussd_menus WHERE account_id = $1 ORDER BY id`, [accountId])).rows;
  }

  async versions(menuId: string): Promise<MenuVersion[]> {
    const { rows } = await this.db.query<MenuVersion>(
      `SELECT version, created_at::float8 AS "createdAt", published_at::float8 AS "publishedAt" FROM ussd_menu_versions WHERE menu_id = $1 ORDER BY version DESC`,
      [menuId],
    );
    return rows;
  }

  async tree(menuId: string, version: number): Promise<MenuTree | null> {
    const { rows } = await this.db.query<{ tree: MenuTree }>(`SELECT tree FROM ussd_menu_versions WHERE menu_id = $1 AND version = $2`, [menuId, version]);
    return rows[0]?.tree ?? null;
  }

  /**
   * Makes a version the live one in one statement: a session starting after it gets the new version, one already
   * running keeps the version it recorded at its start.
   */
  async publish(accountId: string, id: string, version: number | null): Promise<MenuRow | null> {
    const now = this.clock();
    return this.db.tx(async (q) => {
      const { rows } = await q.query<MenuRow>(
        `UPDATE ussd_menus m SET published_version = v.version, updated_at = $3
           FROM ussd_menu_versions v
          WHERE m.id = $1 AND m.account_id = $2 AND v.menu_id = m.id AND v.version = coalesce($4::int, m.latest_version)
          RETURNING m.id, m.account_id AS "accountId", m.name, m.published_version AS "publishedVersion", m.latest_version AS "latestVersion",
                    m.created_at::float8 AS "createdAt", m.updated_at::float8 AS "updatedAt"`,
        [id, accountId, now, version],
      );
      if (!rows[0]) return null;
      await q.query(`UPDATE ussd_menu_versions SET published_at = $3 WHERE menu_id = $1 AND version = $2`, [id, rows[0].publishedVersion, now]);
      return rows[0];
    });
  }

  /**
   * Deletes one of the account's menus no service code uses. Another account's menu is 'missing', in use or not: the
   * answer must not tell that it exists.
   */
  async deleteMenu(accountId: string, id: string): Promise<'deleted' | 'missing' | 'in_use'> {
    try {
      const { rowCount } = await this.db.query(
        `DELETE FROM ussd_menus m WHERE m.id = $1 AND m.account_id = $2 AND NOT EXISTS (SELECT 1 FROM ussd_service_codes c WHERE c.menu_id = m.id)`,
        [id, accountId],
      );
      if (rowCount) return 'deleted';
    } catch (err) {
      // A claim naming the menu committed in between: the foreign key refuses the delete.
      if ((err as { code?: string }).code !== '23503') throw err;
    }
    return (await this.menu(accountId, id)) ? 'in_use' : 'missing';
  }

  // ------------------------------------------------------------ service codes

  /**
   * Claims a code unless it overlaps another account's claim (one extends the other, part by part) or repeats one.
   * Claims are serialised by one transaction-scoped advisory lock, so two instances claiming overlapping codes at
   * once cannot both pass the check.
   */
  async claim(row: Omit<ServiceCodeRow, 'id' | 'createdAt'>): Promise<ServiceCodeRow> {
    try {
      return await this.db.tx(async (q) => {
        await q.query('SELECT pg_advisory_xact_lock($1)', [CLAIM_LOCK]);
        // Parents are the code's candidates; extensions start with the code and a '*' (codes hold no LIKE wildcard).
        const { rows: clash } = await q.query<{ accountId: string; code: string }>(
          `SELECT account_id AS "accountId", code FROM ussd_service_codes WHERE code = ANY($1::text[]) OR code LIKE $2 || '*%'`,
          [claimCandidates(row.code), row.code],
        );
        if (clash.some((c) => c.accountId !== row.accountId || c.code === row.code)) throw new ServiceCodeTakenError(row.code);
        const { rows } = await q.query<ServiceCodeRow>(
          `INSERT INTO ussd_service_codes (id, account_id, code, menu_id, webhook_url, dialect, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${codeCols}`,
          [newId('usc_'), row.accountId, row.code, row.menuId, row.webhookUrl, row.dialect, this.clock()],
        );
        return rows[0];
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new ServiceCodeTakenError(row.code);
      throw err;
    }
  }

  /**
   * Overlapping claims of different accounts, kept from before claims were checked for overlap (at most `limit`
   * pairs): the older claim's account routes them.
   */
  async overlaps(limit = 50): Promise<{ older: ServiceCodeRow; newer: ServiceCodeRow }[]> {
    const cols = (t: string, p: string) =>
      `${t}.id AS "${p}Id", ${t}.account_id AS "${p}AccountId", ${t}.code AS "${p}Code", ${t}.created_at::float8 AS "${p}CreatedAt"`;
    const { rows } = await this.db.query<Record<string, string | number>>(
      `SELECT ${cols('a', 'o')}, ${cols('b', 'n')} FROM ussd_service_codes a JOIN ussd_service_codes b
          ON a.account_id <> b.account_id AND (b.code LIKE a.code || '*%' OR a.code LIKE b.code || '*%')
         AND (a.created_at, a.id) < (b.created_at, b.id)
       ORDER BY a.code, b.code LIMIT $1`,
      [limit],
    );
    const pick = (r: Record<string, string | number>, p: string) =>
      ({ id: r[`${p}Id`], accountId: r[`${p}AccountId`], code: r[`${p}Code`], createdAt: Number(r[`${p}CreatedAt`]) }) as ServiceCodeRow;
    return rows.map((r) => ({ older: pick(r, 'o'), newer: pick(r, 'n') }));
  }

  async serviceCodes(accountId: string): Promise<ServiceCodeRow[]> {
    return (await this.db.query<ServiceCodeRow>(`SELECT ${codeCols} FROM ussd_service_codes WHERE account_id = $1 ORDER BY code`, [accountId])).rows;
  }

  async serviceCode(accountId: string, id: string): Promise<ServiceCodeRow | null> {
    const { rows } = await this.db.query<ServiceCodeRow>(`SELECT ${codeCols} FROM ussd_service_codes WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] ?? null;
  }

  async releaseCode(accountId: string, id: string): Promise<boolean> {
    return (await this.db.query(`DELETE FROM ussd_service_codes WHERE id = $1 AND account_id = $2`, [id, accountId])).rowCount > 0;
  }

  /**
   * The claim a dialled code reaches, with its menu's published version (one statement per new session): the
   * longest claim it extends among the claims of one account, the owner of the oldest of them (overlapping claims
   * of different accounts exist only from before they were refused). With `accountId`, null unless that account is
   * the owner: a caller cannot tell another account's code from an unclaimed one.
   */
  async route(canonical: string, accountId?: string): Promise<(ServiceCodeRow & { publishedVersion: number | null }) | null> {
    const { rows } = await this.db.query<ServiceCodeRow & { publishedVersion: number | null }>(
      `WITH c AS (SELECT * FROM ussd_service_codes WHERE code = ANY($1::text[]))
       SELECT c.id, c.account_id AS "accountId", c.code, c.menu_id AS "menuId", c.webhook_url AS "webhookUrl", c.dialect, c.created_at::float8 AS "createdAt",
              m.published_version AS "publishedVersion"
         FROM c LEFT JOIN ussd_menus m ON m.id = c.menu_id
        WHERE c.account_id = (SELECT account_id FROM c ORDER BY created_at, id LIMIT 1)
        ORDER BY length(c.code) DESC LIMIT 1`,
      [claimCandidates(canonical)],
    );
    const r = rows[0];
    return r && (!accountId || r.accountId === accountId) ? r : null;
  }

  // ------------------------------------------------------------ connectors

  async createConnector(accountId: string, dialect: ConnectorRow['dialect'], secret: string | null, allowIps: string[]): Promise<ConnectorRow> {
    const { rows } = await this.db.query<ConnectorRow>(
      `INSERT INTO ussd_connectors (id, account_id, dialect, secret_hash, allow_ips, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${connectorCols}`,
      [newId('ucon_'), accountId, dialect, secret ? sha256(secret) : null, JSON.stringify(allowIps), this.clock()],
    );
    return rows[0];
  }

  async connectors(accountId: string): Promise<ConnectorRow[]> {
    return (await this.db.query<ConnectorRow>(`SELECT ${connectorCols} FROM ussd_connectors WHERE account_id = $1 ORDER BY id`, [accountId])).rows;
  }

  async deleteConnector(accountId: string, id: string): Promise<boolean> {
    return (await this.db.query(`DELETE FROM ussd_connectors WHERE id = $1 AND account_id = $2`, [id, accountId])).rowCount > 0;
  }

  /**
   * The connector a callback names, when the callback proves it is the aggregator: the shared secret (compared in
   * constant time) and/or the caller's address in the allow-list, whichever the connector has (both when both).
   */
  async authenticate(q: Queryable, id: string, secret: string | undefined, ip: string): Promise<ConnectorRow | null> {
    const { rows } = await q.query<ConnectorRow & { secretHash: string | null }>(`SELECT ${connectorCols}, secret_hash AS "secretHash" FROM ussd_connectors WHERE id = $1`, [id]);
    const c = rows[0];
    if (!c) return null;
    if (c.secretHash) {
      const given = Buffer.from(sha256(secret ?? ''), 'hex');
      if (!timingSafeEqual(given, Buffer.from(c.secretHash, 'hex'))) return null;
    }
    if (c.allowIps.length && !c.allowIps.includes(ip.replace(/^::ffff:/, ''))) return null;
    const { secretHash: _omit, ...row } = c;
    void _omit;
    return row;
  }
}
