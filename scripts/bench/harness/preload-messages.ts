/**
 * `--preload-messages N` (Postgres only): before the first round, the SMS ledger is filled with N final messages as
 * earlier traffic of other accounts would have left them — ids made over the last `--preload-days D` days, three
 * status events each — then vacuumed and analysed. The rounds then run against a ledger that already holds N
 * messages, so their figures show whether the send path's cost per message stays flat as the ledger grows.
 *
 * Where the ledger is partitioned (0055) and still empty, its first partition (every id up to tomorrow) is replaced by
 * partitions of the daemon's width from D days ago, so the history lies in partitions as a running installation's
 * does and today's traffic goes into a partition of its own. After the rounds, `measureRetention` drops the
 * partitions older than half the history, as retention would, and times each drop.
 */
import pino from 'pino';
import pg from 'pg';
import { CORE_TABLES } from '../../../src/store/sql/core-tables.js';
import type { RetentionConfig } from '../../../src/config/schema.js';
import { openDb } from '../../../src/store/sql/db.js';
import { partitionWidthDays, RangePartitions, type PartitionedTable } from '../../../src/store/sql/range-partitions.js';
import { Retention } from '../../../src/store/sql/retention.js';
import { UsageError, type Args } from './args.js';
import { CROCKFORD_PAIRS, MESSAGE_ID_SQL } from './preload-events.js';
import { withPg } from './stack.js';
import type { CommonOptions } from './scenario.js';

export const PRELOAD_MESSAGES_USAGE = `  --preload-messages N Postgres only: load N final messages of other accounts (three events each) into
                       the ledger before the first round, in partitions of the daemon's width; after the
                       rounds, time the drop of the partitions older than half the history, as retention would
  --preload-days D     with --preload-messages: the history's ids span the last D days (default 30)`;

const DAY_MS = 86_400_000;
/** Messages per INSERT … SELECT, each statement its own transaction. */
const MESSAGES_PER_STATEMENT = 250_000;
/** The daemon's retention for sms (the default, 90 days): its partition width. */
const WIDTH_DAYS = partitionWidthDays(90);
const MESSAGES = CORE_TABLES.find((t) => t.name === 'messages') as PartitionedTable;
const LEDGER_TABLES = ['messages', 'message_events', 'message_parts'];

export const PRELOAD_MESSAGES_FLAGS = ['preload-messages', 'preload-days'] as const;

/** The number of messages asked for (0: none); refuses it where it cannot apply. */
export function preloadMessagesOption(args: Args, common: CommonOptions): { messages: number; days: number } {
  const messages = args.number('preload-messages', 0, { min: 0, max: 100_000_000, integer: true });
  const days = args.number('preload-days', 30, { min: 2, max: 365, integer: true });
  if (messages > 0 && common.backend !== 'redis+postgres') {
    throw new UsageError('--preload-messages needs the Postgres backend (DATABASE_URL and REDIS_URL, or --backend redis+postgres)');
  }
  return { messages, days };
}

/** Seconds the watchdog allows for the load, its VACUUM (ANALYZE) and the retention measurement, generously. */
export function preloadMessagesBudgetSeconds(args: Args): number {
  const n = args.number('preload-messages', 0);
  return n > 0 ? 120 + Math.ceil((n / 1_000_000) * 120) : 0;
}

export interface MessagePreload {
  messages: number;
  days: number;
  /** Range partitions of messages after the load (0: the ledger is not partitioned). */
  partitions: number;
  loadSeconds: number;
  vacuumSeconds: number;
  /** pg_total_relation_size of messages, message_events and message_parts with their partitions, bytes. */
  totalBytes: number;
}

export interface RetentionDrop {
  partition: string;
  /** Rows in the partition (counted before the drop) and how long its drop took. */
  rows: number;
  seconds: number;
}

/*
 * Messages $1..$2 of $4, evenly over the time from $5 (ms) to $6 (ms), ids as newId('msg_') makes them (MESSAGE_ID_SQL,
 * with the base32 pairs in $3), accounts round robin from $7, final statuses as traffic ends (mostly delivered), each
 * with its three events (queued, submitted, final). OFFSET 0 makes each message once, not once per event.
 */
const INSERT_SQL = `WITH m AS (
    INSERT INTO messages (id, account_id, ingress, source, destination, body, encoding, status, error_code, currency, segments,
      route_rule, upstream_id, upstream_message_id, parts_total, parts_done, attempts, created_at, updated_at, final_at)
    SELECT ${MESSAGE_ID_SQL}, ($7::text[])[(g % cardinality($7::text[])) + 1], 'smpp', 'FerryBench', '233' || lpad((r2 % 1000000000)::text, 9, '0'),
      'Your code is ' || (r1 % 1000000)::text, 'gsm7', final, CASE final WHEN 'undelivered' THEN '001' END, 'USD', 1,
      'default', 'sim', to_hex(r1), 1, 1, 1, to_timestamp(t / 1000.0), to_timestamp(t / 1000.0 + 2), to_timestamp(t / 1000.0 + 2)
    FROM (
      SELECT g, $5::bigint + (g * ($6::bigint - $5::bigint) / $4::bigint) AS t, (random() * 1099511627776)::bigint AS r1,
        (random() * 1099511627776)::bigint AS r2, CASE WHEN random() < 0.95 THEN 'delivered' ELSE 'undelivered' END AS final
      FROM generate_series($1::bigint, $2::bigint) AS g OFFSET 0
    ) s
    RETURNING id, status, created_at
  )
  INSERT INTO message_events (message_id, status, at)
  SELECT m.id, e.status, m.created_at FROM m CROSS JOIN LATERAL (VALUES ('queued'), ('submitted'), (m.status)) AS e(status)`;

const SIZE_SQL = `SELECT sum(COALESCE(
    (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree(t.name::regclass) WHERE isleaf),
    pg_total_relation_size(t.name::regclass)))::text AS bytes
  FROM unnest($1::text[]) AS t(name)`;

async function isPartitioned(c: pg.Client): Promise<boolean> {
  return (await c.query<{ p: boolean }>(`SELECT relkind = 'p' AS p FROM pg_class WHERE oid = 'messages'::regclass`)).rows[0]?.p === true;
}

/** Loads the history (see the file comment) into the database at `dbUrl`, whose ledger must still be empty. */
export async function preloadMessages(dbUrl: string, messages: number, days: number, log: (line: string) => void): Promise<MessagePreload> {
  const now = Date.now();
  const firstMs = Math.floor((now - days * DAY_MS) / DAY_MS) * DAY_MS;
  const partitioned = await withPg(dbUrl, async (c) => {
    const { rows } = await c.query<{ n: string }>(`SELECT count(*)::text AS n FROM messages`);
    if (Number(rows[0].n) > 0) throw new Error('--preload-messages needs an empty ledger');
    if (!(await isPartitioned(c))) return false;
    // The empty ranges (the first partition, and those the daemon made ahead at start) give way to ranges from `days`
    // ago; the default partitions stay (the three tables share their bounds).
    for (const t of LEDGER_TABLES) {
      const { rows: parts } = await c.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass AND c.relname <> $2`,
        [t, `${t}_default`],
      );
      for (const p of parts) {
        await c.query(`ALTER TABLE ${t} DETACH PARTITION ${p.name}`);
        await c.query(`DROP TABLE ${p.name}`);
      }
    }
    return true;
  });
  if (partitioned) {
    const db = await openDb({ url: dbUrl, dataDir: '', poolSize: 1 });
    try {
      const made = await new RangePartitions(db, pino({ level: 'silent' })).ensure(MESSAGES, WIDTH_DAYS, now, firstMs);
      log(`preload: ${made.length / LEDGER_TABLES.length} ranges of ${WIDTH_DAYS} days from ${new Date(firstMs).toISOString().slice(0, 10)}`);
    } finally {
      await db.close();
    }
  }
  const accounts = Array.from({ length: 7 }, (_, i) => `acc_preload${i}`);
  return withPg(dbUrl, async (c) => {
    const started = performance.now();
    // The newest history ends a minute ago: the bench's own messages come after it.
    const lastMs = now - 60_000;
    for (let from = 0; from < messages; from += MESSAGES_PER_STATEMENT) {
      const to = Math.min(messages, from + MESSAGES_PER_STATEMENT) - 1;
      const t0 = performance.now();
      await c.query(INSERT_SQL, [from, to, CROCKFORD_PAIRS, messages, firstMs + 60_000, lastMs, accounts]);
      const perMessageUs = ((performance.now() - t0) * 1000) / (to - from + 1);
      log(`preload: ${(to + 1).toLocaleString('en')} of ${messages.toLocaleString('en')} messages in ${((performance.now() - started) / 1000).toFixed(1)} s (this statement ${perMessageUs.toFixed(1)} µs per message)`);
    }
    const loadSeconds = (performance.now() - started) / 1000;
    const v0 = performance.now();
    for (const t of LEDGER_TABLES) await c.query(`VACUUM (ANALYZE) ${t}`);
    const vacuumSeconds = (performance.now() - v0) / 1000;
    const partitions = partitioned ? Number((await c.query<{ n: string }>(`SELECT count(*)::text AS n FROM pg_inherits WHERE inhparent = 'messages'::regclass`)).rows[0].n) - 1 : 0;
    const totalBytes = Number((await c.query<{ bytes: string }>(SIZE_SQL, [LEDGER_TABLES])).rows[0].bytes);
    return { messages, days, partitions, loadSeconds, vacuumSeconds, totalBytes };
  });
}

/**
 * Drops the ledger's partitions whose range ended more than days/2 ago, as a retention pass would (the same
 * RangePartitions.dropExpired), one at a time, timing each. A ledger that is not partitioned is purged as retention
 * did before: one pass deleting at most 100,000 messages older than days/2 with their children, timed.
 */
export async function measureRetention(dbUrl: string, days: number): Promise<RetentionDrop[]> {
  const db = await openDb({ url: dbUrl, dataDir: '', poolSize: 1 });
  try {
    const log = pino({ level: 'silent' });
    const partitions = new RangePartitions(db, log);
    const cutoff = Date.now() - Math.floor(days / 2) * DAY_MS;
    const drops: RetentionDrop[] = [];
    const ranges = await partitions.list('messages');
    if (!ranges.length) {
      const config = { days: 0, outbound: 0, webhooks: 0, sms: Math.floor(days / 2), messenger: 0, email: 0, ussd: 0, shortlink: 0, logs: 0 };
      const retention = new Retention({
        db,
        log,
        config: { ...config, intervalSeconds: 0, batchRows: 1000, maxRowsPerPass: 100_000 } as RetentionConfig,
        tables: CORE_TABLES.filter((t) => t.name === 'messages'),
      });
      const t0 = performance.now();
      const out = await retention.runOnce();
      drops.push({ partition: 'messages (row by row, one pass)', rows: out?.messages ?? 0, seconds: (performance.now() - t0) / 1000 });
      return drops;
    }
    for (const p of ranges) {
      if (p.toMs > cutoff) break;
      const { rows } = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${p.name}`);
      const t0 = performance.now();
      // Only this partition: the cutoff is its own end.
      const dropped = await partitions.dropExpired(MESSAGES, p.toMs);
      if (!dropped.some((d) => d.name === p.name)) break;
      drops.push({ partition: p.name, rows: Number(rows[0].n), seconds: (performance.now() - t0) / 1000 });
    }
    return drops;
  } finally {
    await db.close();
  }
}
