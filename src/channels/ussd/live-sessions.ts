import { readFileSync } from 'node:fs';
import type { RedisClient } from '../../platform/redis-clients.js';
import type { Db } from '../../store/types.js';
import { assetPath } from '../../util/paths.js';
import type { SessionRow, SessionStore, TranscriptEntry } from './session-store.js';

/**
 * Where a live session's state is between hops. The session row in SQL is written when the session starts and when
 * it ends (with the whole transcript) either way; in between, hops go to Redis (a hash per session with a TTL) when
 * Redis is configured, else to the SQL row itself. Either way a hop writes only over the version it read.
 */
export interface LiveSessions {
  /** The live session of a dialogue; `persisted` says how much of its transcript the SQL row holds. */
  get(networkKey: string): Promise<SessionRow | null>;
  /** Writes a hop that does not end the session; false when another hop got there first. */
  save(row: SessionRow, append: TranscriptEntry[]): Promise<boolean>;
  /**
   * Before a session ends: takes its live copy over the version read, so a hop racing on another instance cannot
   * write after the end; false when one already did (the caller reads again).
   */
  claim(row: SessionRow): Promise<boolean>;
  /** The session ended (its row is final in SQL): drop the live copy. */
  forget(row: SessionRow): Promise<void>;
  close(): Promise<void>;
}

/** Embedded (and any instance without Redis): the SQL row is the live state. */
export class SqlLiveSessions implements LiveSessions {
  constructor(
    private readonly db: Db,
    private readonly sessions: SessionStore,
  ) {}

  async get(networkKey: string): Promise<SessionRow | null> {
    const row = await this.sessions.live(networkKey);
    if (row) row.persisted = row.transcript.length;
    return row;
  }

  save(row: SessionRow, append: TranscriptEntry[]): Promise<boolean> {
    return this.db.tx((q) => this.sessions.update(q, row, append, row.version));
  }

  /** The SQL row's own version check does it. */
  async claim(): Promise<boolean> {
    return true;
  }

  async forget(): Promise<void> {}

  async close(): Promise<void> {}
}

const SCRIPT = readFileSync(assetPath('channels', 'ussd', 'lua', 'live-cas.lua'), 'utf8');

/**
 * Redis: `<prefix>ussd:live:{<network key>}` is a hash {v: version, row: the session as JSON, transcript included},
 * expiring `ttlMs` after its last hop (longer than the session timeout, so the sweep ends an idle session from its
 * full state before Redis forgets it). A dialogue with no hash yet (its first hop only, or Redis lost it) is read
 * from its SQL row.
 */
export class RedisLiveSessions implements LiveSessions {
  private readonly redis: RedisClient & { ussdLiveCas(key: string, expected: number, row: string, ttl: number): Promise<number> };

  constructor(
    /** From the core's client factory (ctx.redis): fails fast while Redis is down; errors logged there. */
    redis: RedisClient,
    private readonly prefix: string,
    private readonly sessions: SessionStore,
    private readonly ttlMs: number,
  ) {
    redis.defineCommand('ussdLiveCas', { lua: SCRIPT, numberOfKeys: 1 });
    this.redis = redis as typeof this.redis;
  }

  async connect(): Promise<void> {
    await this.redis.connect();
  }

  /** The one place the key is built; the braces keep a session's key on one Cluster slot. */
  private key(networkKey: string): string {
    return `${this.prefix}ussd:live:{${networkKey}}`;
  }

  async get(networkKey: string): Promise<SessionRow | null> {
    const [v, json] = await this.redis.hmget(this.key(networkKey), 'v', 'row');
    if (v !== null && json !== null) {
      const row = JSON.parse(json) as SessionRow;
      row.liveVersion = Number(v);
      return row;
    }
    const row = await this.sessions.live(networkKey);
    if (row) {
      row.persisted = row.transcript.length;
      row.liveVersion = -1;
    }
    return row;
  }

  async save(row: SessionRow, append: TranscriptEntry[]): Promise<boolean> {
    const next: SessionRow = { ...row, transcript: [...row.transcript, ...append], liveVersion: undefined };
    const written = await this.redis.ussdLiveCas(this.key(row.networkKey), row.liveVersion ?? -1, JSON.stringify(next), this.ttlMs);
    return written === 1;
  }

  async claim(row: SessionRow): Promise<boolean> {
    const same: SessionRow = { ...row, liveVersion: undefined };
    const written = await this.redis.ussdLiveCas(this.key(row.networkKey), row.liveVersion ?? -1, JSON.stringify(same), this.ttlMs);
    if (written === 1) row.liveVersion = (row.liveVersion ?? -1) + 1;
    return written === 1;
  }

  async forget(row: SessionRow): Promise<void> {
    await this.redis.del(this.key(row.networkKey));
  }

  /** The core closes the client at shutdown. */
  async close(): Promise<void> {}
}
