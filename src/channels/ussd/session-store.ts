import type { Db, Queryable } from '../../store/types.js';
import type { AppDialect } from './menu-tree.js';
import type { MenuPosition } from './menu-engine.js';

export type UssdChannel = 'smpp' | 'africastalking' | 'hubtel' | 'simulate';
export type EndStatus = 'Success' | 'Incomplete' | 'Failed';

/** What answers a session, fixed at its start (a menu keeps the version it started on). */
export type SessionApp = { kind: 'menu'; menuId: string; version: number } | { kind: 'webhook'; url: string; dialect: AppDialect };

export interface SessionState {
  /** Hosted menus only. */
  position?: MenuPosition;
  /** The current screen's pages (one unless it was over 182 characters) and the page shown. */
  pages: string[];
  page: number;
  /** Every input so far (pre-filled ones first); page turns are not inputs. */
  inputs: string[];
}

export interface TranscriptEntry {
  at: number;
  /** out: a screen Ferry sent; in: what the phone answered. */
  dir: 'in' | 'out';
  text: string;
}

export interface SessionRow {
  id: string;
  accountId: string;
  serviceCodeId: string;
  serviceCode: string;
  dialled: string;
  phone: string;
  networkCode: string;
  channel: UssdChannel;
  networkKey: string;
  status: 'active' | 'ended';
  endStatus: EndStatus | null;
  error: string | null;
  app: SessionApp;
  state: SessionState;
  transcript: TranscriptEntry[];
  hops: number;
  lastInput: string | null;
  resumedFrom: string | null;
  version: number;
  startedAt: number;
  updatedAt: number;
  endedAt: number | null;
  /** Live sessions only: how many transcript entries the SQL row holds (the rest are in the live copy). */
  persisted?: number;
  /** Live sessions in Redis only: the version of the live copy (-1: none yet). */
  liveVersion?: number;
}

const cols = `id, account_id AS "accountId", service_code_id AS "serviceCodeId", service_code AS "serviceCode", dialled, phone,
  network_code AS "networkCode", channel, network_key AS "networkKey", status, end_status AS "endStatus", error, app, state, transcript,
  hops, last_input AS "lastInput", resumed_from AS "resumedFrom", version, started_at::float8 AS "startedAt", updated_at::float8 AS "updatedAt",
  ended_at::float8 AS "endedAt"`;

export interface SessionFilter {
  status?: 'active' | 'ended';
  endStatus?: EndStatus;
  phone?: string;
  serviceCode?: string;
  channel?: UssdChannel;
  /** Sessions with an id below this (the cursor: ids sort by start time). */
  before?: string;
  limit: number;
}

/** USSD sessions in SQL: a row per session with its state and transcript; the live one found by its network key. */
export class SessionStore {
  constructor(private readonly db: Db) {}

  async insert(q: Queryable, s: SessionRow): Promise<void> {
    await q.query(
      `INSERT INTO ussd_sessions (id, account_id, service_code_id, service_code, dialled, phone, network_code, channel, network_key, status,
         end_status, error, app, state, transcript, hops, last_input, resumed_from, version, started_at, updated_at, ended_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`,
      [
        s.id, s.accountId, s.serviceCodeId, s.serviceCode, s.dialled, s.phone, s.networkCode, s.channel, s.networkKey, s.status,
        s.endStatus, s.error, JSON.stringify(s.app), JSON.stringify(s.state), JSON.stringify(s.transcript), s.hops, s.lastInput,
        s.resumedFrom, s.version, s.startedAt, s.updatedAt, s.endedAt,
      ],
    );
  }

  /**
   * Writes a hop over the version it was computed from; false when another hop got there first (the caller reads
   * again). `append` joins the transcript in SQL, so the row is never rewritten whole.
   */
  async update(q: Queryable, s: SessionRow, append: TranscriptEntry[], readVersion: number): Promise<boolean> {
    const { rowCount } = await q.query(
      `UPDATE ussd_sessions SET status = $3, end_status = $4, error = $5, state = $6, transcript = transcript || $7::jsonb, hops = $8,
         last_input = $9, version = version + 1, updated_at = $10, ended_at = $11
       WHERE id = $1 AND version = $2 AND status = 'active'`,
      [s.id, readVersion, s.status, s.endStatus, s.error, JSON.stringify(s.state), JSON.stringify(append), s.hops, s.lastInput, s.updatedAt, s.endedAt],
    );
    return rowCount > 0;
  }

  async live(networkKey: string, q: Queryable = this.db): Promise<SessionRow | null> {
    const { rows } = await q.query<SessionRow>(`SELECT ${cols} FROM ussd_sessions WHERE network_key = $1 AND status = 'active'`, [networkKey]);
    return rows[0] ?? null;
  }

  async get(accountId: string, id: string): Promise<SessionRow | null> {
    const { rows } = await this.db.query<SessionRow>(`SELECT ${cols} FROM ussd_sessions WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] ?? null;
  }

  async list(accountId: string, f: SessionFilter): Promise<SessionRow[]> {
    const where = ['account_id = $1'];
    const params: unknown[] = [accountId];
    const add = (sql: string, v: unknown) => {
      params.push(v);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (f.status) add('status = ?', f.status);
    if (f.endStatus) add('end_status = ?', f.endStatus);
    if (f.phone) add('phone = ?', f.phone);
    if (f.serviceCode) add('service_code = ?', f.serviceCode);
    if (f.channel) add('channel = ?', f.channel);
    if (f.before) add('id < ?', f.before);
    params.push(f.limit);
    const { rows } = await this.db.query<SessionRow>(`SELECT ${cols} FROM ussd_sessions WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`, params);
    return rows;
  }

  /** The dropped session a phone may resume: ended Incomplete within the window, not resumed yet. */
  async resumable(phone: string, serviceCodeId: string, since: number): Promise<SessionRow | null> {
    const { rows } = await this.db.query<SessionRow>(
      `SELECT ${cols} FROM ussd_sessions s WHERE phone = $1 AND service_code_id = $2 AND end_status = 'Incomplete' AND ended_at >= $3
         AND NOT EXISTS (SELECT 1 FROM ussd_sessions r WHERE r.resumed_from = s.id)
       ORDER BY ended_at DESC LIMIT 1`,
      [phone, serviceCodeId, since],
    );
    return rows[0] ?? null;
  }

  /** Live sessions idle since before `cutoff` (the network has given up on them), at most `limit`. */
  async idle(cutoff: number, limit: number): Promise<SessionRow[]> {
    const { rows } = await this.db.query<SessionRow>(`SELECT ${cols} FROM ussd_sessions WHERE status = 'active' AND updated_at < $1 ORDER BY updated_at LIMIT $2`, [cutoff, limit]);
    return rows;
  }
}
