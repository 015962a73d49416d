import { ApiError } from '../../../http/errors.js';
import { SecretCipher } from '../../../security/cipher.js';
import type { Db } from '../../../store/types.js';
import { newId } from '../../../util/ids.js';
import type { AgentConfig } from './agent-config.js';

/** One version of an agent as the API shows it: its configuration without the keys, and whether each is set. */
export interface AgentRecord {
  id: string;
  accountId: string;
  currentVersion: number;
  version: number;
  /** The configuration with llm.apiKey and stt.apiKey null: the keys stay sealed. */
  config: AgentConfig;
  llmKeySet: boolean;
  sttKeySet: boolean;
  createdAt: Date;
  updatedAt: Date;
  versionCreatedAt: Date;
}

/** A version for the call loop: its whole configuration, keys unsealed. Never shown through the API. */
export interface LoadedAgent {
  agentId: string;
  accountId: string;
  version: number;
  config: AgentConfig;
  /** The agent was deleted after this version was made (a call that started with it goes on). */
  deleted: boolean;
}

interface Row {
  id: string;
  account_id: string;
  current_version: number;
  created_at: Date | string;
  updated_at: Date | string;
  deleted_at: Date | string | null;
  version: number;
  config: AgentConfig | string;
  llm_api_key_sealed: string | null;
  stt_api_key_sealed: string | null;
  version_created_at: Date | string;
}

const SELECT = `SELECT a.id, a.account_id, a.current_version, a.created_at, a.updated_at, a.deleted_at, v.version, v.config,
  v.llm_api_key_sealed, v.stt_api_key_sealed, v.created_at AS version_created_at
  FROM voice_agents a JOIN voice_agent_versions v ON v.agent_id = a.id`;

const date = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));
const configOf = (r: Row): AgentConfig => (typeof r.config === 'string' ? (JSON.parse(r.config) as AgentConfig) : r.config);

/** Agent ids as this store makes them (a list cursor is one). */
export const AGENT_ID = /^agent_[0-9a-z]{26}$/;

/**
 * Agents in SQL (migrations/0050_voice_agents.sql): `voice_agents` points at the current version; every create and
 * change adds an immutable row to `voice_agent_versions` holding the whole configuration, its keys sealed (AES-256-GCM
 * under a key derived for voice agents). A deleted agent is marked, not removed: its versions stay for the calls that
 * started with them. Every read is scoped to the account: another account's agent is not found.
 */
export class AgentStore {
  private readonly cipher: SecretCipher;

  constructor(private readonly o: { db: Db; key: Buffer }) {
    this.cipher = new SecretCipher({ current: { id: SecretCipher.keyIdOf(o.key), key: o.key } });
  }

  /** A new agent at version 1. */
  async create(accountId: string, config: AgentConfig): Promise<AgentRecord> {
    const id = newId('agent_');
    const sealed = this.seal(config);
    await this.o.db.tx(async (q) => {
      const agent = q.query(`INSERT INTO voice_agents (id, account_id, name, current_version) VALUES ($1, $2, $3, 1)`, [id, accountId, config.name]);
      const version = q.query(
        `INSERT INTO voice_agent_versions (agent_id, version, config, llm_api_key_sealed, stt_api_key_sealed) VALUES ($1, 1, $2::jsonb, $3, $4)`,
        [id, JSON.stringify(sealed.config), sealed.llmKey, sealed.sttKey],
      );
      await Promise.all([agent, version]);
    });
    return (await this.get(accountId, id))!;
  }

  /**
   * Version `after + 1` of the agent, made current; null when the agent is gone or `after` is no longer its current
   * version (another change came first: the caller merges again onto the new one).
   */
  async addVersion(accountId: string, agentId: string, after: number, config: AgentConfig): Promise<AgentRecord | null> {
    const sealed = this.seal(config);
    const moved = await this.o.db.tx(async (q) => {
      const { rowCount } = await q.query(
        `UPDATE voice_agents SET current_version = $3 + 1, name = $4, updated_at = now()
         WHERE id = $1 AND account_id = $2 AND current_version = $3 AND deleted_at IS NULL`,
        [agentId, accountId, after, config.name],
      );
      if (!rowCount) return false;
      await q.query(
        `INSERT INTO voice_agent_versions (agent_id, version, config, llm_api_key_sealed, stt_api_key_sealed) VALUES ($1, $2, $3::jsonb, $4, $5)`,
        [agentId, after + 1, JSON.stringify(sealed.config), sealed.llmKey, sealed.sttKey],
      );
      return true;
    });
    return moved ? this.get(accountId, agentId) : null;
  }

  /** The agent at its current version, or at `version`; null when the account has no such agent (or it was deleted). */
  async get(accountId: string, agentId: string, version?: number): Promise<AgentRecord | null> {
    const { rows } = await this.o.db.query<Row>(
      `${SELECT} AND v.version = COALESCE($3, a.current_version) WHERE a.id = $1 AND a.account_id = $2 AND a.deleted_at IS NULL`,
      [agentId, accountId, version ?? null],
    );
    return rows.length ? this.record(rows[0]) : null;
  }

  /** Whether the account has this agent (not deleted): tells "no such agent" from "no such version". */
  async exists(accountId: string, agentId: string): Promise<{ currentVersion: number } | null> {
    const { rows } = await this.o.db.query<{ current_version: number }>(
      `SELECT current_version FROM voice_agents WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
      [agentId, accountId],
    );
    return rows.length ? { currentVersion: rows[0].current_version } : null;
  }

  /** The account's agents at their current versions, newest first, before the agent id `before`. */
  async list(accountId: string, filter: { name?: string; before?: string }, limit: number): Promise<AgentRecord[]> {
    const params: unknown[] = [accountId];
    let where = `a.account_id = $1 AND a.deleted_at IS NULL`;
    if (filter.name !== undefined) where += ` AND a.name = $${params.push(filter.name)}`;
    if (filter.before !== undefined) where += ` AND a.id < $${params.push(filter.before)}`;
    const { rows } = await this.o.db.query<Row>(`${SELECT} AND v.version = a.current_version WHERE ${where} ORDER BY a.id DESC LIMIT $${params.push(limit)}`, params);
    return rows.map((r) => this.record(r));
  }

  /** An agent's versions, newest first, below version `before`; null when the account has no such agent. */
  async versions(accountId: string, agentId: string, before: number | undefined, limit: number): Promise<AgentRecord[] | null> {
    if (!(await this.exists(accountId, agentId))) return null;
    const { rows } = await this.o.db.query<Row>(
      `${SELECT} WHERE a.id = $1 AND a.account_id = $2 AND a.deleted_at IS NULL AND ($3::integer IS NULL OR v.version < $3) ORDER BY v.version DESC LIMIT $4`,
      [agentId, accountId, before ?? null, limit],
    );
    return rows.map((r) => this.record(r));
  }

  /** Marks the agent deleted; false when the account has no such agent. Its versions stay (calls keep theirs). */
  async softDelete(accountId: string, agentId: string): Promise<boolean> {
    const { rowCount } = await this.o.db.query(
      `UPDATE voice_agents SET deleted_at = now(), updated_at = now() WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
      [agentId, accountId],
    );
    return rowCount > 0;
  }

  /**
   * For the call loop (never through the API): the whole configuration of a version with its keys unsealed. Without
   * `version`, the current one of an agent that is not deleted (what a new call starts with); with it, that version
   * even of a deleted agent (a call that started with it goes on). VOICE_AGENT_NOT_FOUND otherwise.
   */
  async loadVersion(accountId: string, agentId: string, version?: number): Promise<LoadedAgent> {
    const { rows } = await this.o.db.query<Row>(
      `${SELECT} AND v.version = COALESCE($3, a.current_version) WHERE a.id = $1 AND a.account_id = $2 AND ($3::integer IS NOT NULL OR a.deleted_at IS NULL)`,
      [agentId, accountId, version ?? null],
    );
    if (!rows.length) {
      throw new ApiError('VOICE_AGENT_NOT_FOUND', { message: version === undefined ? 'No such voice agent' : `No version ${version} of voice agent ${agentId}`, data: { agentId, ...(version === undefined ? {} : { version }) } });
    }
    const r = rows[0];
    const config = configOf(r);
    if (config.llm) config.llm.apiKey = r.llm_api_key_sealed ? this.cipher.decrypt(r.llm_api_key_sealed) : null;
    config.stt.apiKey = r.stt_api_key_sealed ? this.cipher.decrypt(r.stt_api_key_sealed) : null;
    return { agentId: r.id, accountId: r.account_id, version: r.version, config, deleted: r.deleted_at !== null };
  }

  /** The configuration as stored (keys taken out) and the keys sealed. */
  private seal(config: AgentConfig): { config: AgentConfig; llmKey: string | null; sttKey: string | null } {
    const llmKey = config.llm?.apiKey ? this.cipher.encrypt(config.llm.apiKey) : null;
    const sttKey = config.stt.apiKey ? this.cipher.encrypt(config.stt.apiKey) : null;
    return {
      config: { ...config, llm: config.llm && { ...config.llm, apiKey: null }, stt: { ...config.stt, apiKey: null } },
      llmKey,
      sttKey,
    };
  }

  private record(r: Row): AgentRecord {
    return {
      id: r.id,
      accountId: r.account_id,
      currentVersion: r.current_version,
      version: r.version,
      config: configOf(r),
      llmKeySet: r.llm_api_key_sealed !== null,
      sttKeySet: r.stt_api_key_sealed !== null,
      createdAt: date(r.created_at),
      updatedAt: date(r.updated_at),
      versionCreatedAt: date(r.version_created_at),
    };
  }
}
