import type { Queryable } from '../../store/types.js';

export interface PushTopic {
  name: string;
  size: number;
  createdAt: Date;
}

interface TopicRow {
  name: string;
  size: number | string;
  created_at: Date | string;
}

const toTopic = (r: TopicRow): PushTopic => ({ name: r.name, size: Number(r.size), createdAt: new Date(r.created_at) });

/**
 * push_topics and their subscriptions. A topic's size is kept by the statements that add and remove subscriptions,
 * counting only the rows each actually inserted or deleted, under the topic row's lock: exact however many requests
 * (and device deletions) run at once.
 */
export class PushTopicStore {
  async get(q: Queryable, accountId: string, name: string): Promise<PushTopic | null> {
    const r = await q.query<TopicRow>(`SELECT name, size, created_at FROM push_topics WHERE account_id = $1 AND name = $2`, [accountId, name]);
    return r.rows[0] ? toTopic(r.rows[0]) : null;
  }

  /** By name, after `after`. */
  async list(q: Queryable, accountId: string, after: string | undefined, limit: number): Promise<PushTopic[]> {
    const r = await q.query<TopicRow>(
      `SELECT name, size, created_at FROM push_topics WHERE account_id = $1 AND ($2::text IS NULL OR name > $2) ORDER BY name LIMIT $3`,
      [accountId, after ?? null, limit],
    );
    return r.rows.map(toTopic);
  }

  /** Subscribes the devices (created the topic if needed); `added` counts those not subscribed before. */
  async subscribe(q: Queryable, accountId: string, name: string, deviceIds: readonly string[]): Promise<{ topic: PushTopic; added: number }> {
    await q.query(`INSERT INTO push_topics (account_id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [accountId, name]);
    const r = await q.query<TopicRow & { changed: number | string }>(
      `WITH added AS (
         INSERT INTO push_topic_subscriptions (account_id, topic, device_id) SELECT $1, $2, unnest($3::text[])
         ON CONFLICT DO NOTHING RETURNING 1)
       UPDATE push_topics SET size = size + (SELECT count(*) FROM added) WHERE account_id = $1 AND name = $2
       RETURNING name, size, created_at, (SELECT count(*) FROM added) AS changed`,
      [accountId, name, deviceIds],
    );
    return { topic: toTopic(r.rows[0]), added: Number(r.rows[0].changed) };
  }

  /** Unsubscribes the devices; `removed` counts those that were subscribed. Null when the account has no such topic. */
  async unsubscribe(q: Queryable, accountId: string, name: string, deviceIds: readonly string[]): Promise<{ topic: PushTopic; removed: number } | null> {
    const r = await q.query<TopicRow & { changed: number | string }>(
      `WITH removed AS (
         DELETE FROM push_topic_subscriptions WHERE account_id = $1 AND topic = $2 AND device_id = ANY($3::text[]) RETURNING 1)
       UPDATE push_topics SET size = size - (SELECT count(*) FROM removed) WHERE account_id = $1 AND name = $2
       RETURNING name, size, created_at, (SELECT count(*) FROM removed) AS changed`,
      [accountId, name, deviceIds],
    );
    return r.rows[0] ? { topic: toTopic(r.rows[0]), removed: Number(r.rows[0].changed) } : null;
  }

  /**
   * Removes every subscription of these devices and takes them off their topics' sizes. The caller holds the devices'
   * locks (no subscription of theirs can be added meanwhile); the topics are locked in name order first, as a
   * subscription request locks its one topic, so two of these never wait on each other in a cycle.
   */
  async detach(q: Queryable, accountId: string, deviceIds: readonly string[]): Promise<void> {
    if (!deviceIds.length) return;
    const topics = await q.query<{ topic: string }>(
      `SELECT DISTINCT topic FROM push_topic_subscriptions WHERE account_id = $1 AND device_id = ANY($2::text[])`,
      [accountId, deviceIds],
    );
    if (!topics.rows.length) return;
    const names = topics.rows.map((x) => x.topic).sort();
    await q.query(`SELECT name FROM push_topics WHERE account_id = $1 AND name = ANY($2::text[]) ORDER BY name FOR UPDATE`, [accountId, names]);
    await q.query(
      `WITH removed AS (
         DELETE FROM push_topic_subscriptions WHERE account_id = $1 AND device_id = ANY($2::text[]) RETURNING topic)
       UPDATE push_topics t SET size = t.size - r.n
       FROM (SELECT topic, count(*) AS n FROM removed GROUP BY topic) r
       WHERE t.account_id = $1 AND t.name = r.topic`,
      [accountId, deviceIds],
    );
  }
}
