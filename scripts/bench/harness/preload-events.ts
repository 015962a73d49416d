/**
 * `--preload-events N` (with --webhooks, Postgres only): before the bench endpoint exists, the event log
 * (webhook_events) is filled with N events as earlier traffic would have left them — three message events per
 * message (sms.queued, sms.sent, a final one) with the payloads, ids and message keys the daemon writes, spread over
 * several accounts including the bench's own — then vacuumed and analysed as autovacuum would have by then. The
 * rounds then run against a log that already holds N events, so their figures show whether the cost per event stays
 * flat as the log grows.
 *
 * Every preloaded event commits before the endpoint is created, and its cursor starts at a tick taken then, whose
 * snapshot sees them all: they count as read (event-stream.ts takes only events not visible in the cursor's tick),
 * so the receiver gets none of them and the bench's counts stay exact. `checkPreloadRead` asserts that.
 */
import pg from 'pg';
import { EVENT_ID_SQL } from '../../../src/events/event-outbox.js';
import { newId } from '../../../src/util/ids.js';
import { UsageError, type Args } from './args.js';
import type { CommonOptions } from './scenario.js';

export const PRELOAD_USAGE = `  --preload-events N   with --webhooks, Postgres only: load N events into the event log before the first round,
                       as earlier traffic of the bench and other accounts would have left them (already read by
                       the bench endpoint), then VACUUM (ANALYZE); prints the load time and the table's size`;

/** Messages per INSERT … SELECT (three events each), each statement its own transaction. */
const MESSAGES_PER_STATEMENT = 200_000;
/** The bench account and this many others share the preloaded history round robin. */
const OTHER_ACCOUNTS = 7;
/** newId's alphabet (src/util/ids.ts): lower-case Crockford base32. */
const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
/** Every two-character Crockford string, the one for a 10-bit value v at bytes 2v and 2v + 1. */
export const CROCKFORD_PAIRS = Buffer.from(Array.from({ length: 1024 }, (_, i) => CROCKFORD[i >> 5] + CROCKFORD[i & 31]).join(''), 'ascii');

/** The number of events asked for (0: none); refuses it where it cannot apply. */
export function preloadEventsOption(args: Args, common: CommonOptions): number {
  const n = args.number('preload-events', 0, { min: 0, max: 100_000_000, integer: true });
  if (n === 0) return 0;
  if (!args.has('webhooks')) throw new UsageError('--preload-events fills the webhook event log: it needs --webhooks');
  if (common.backend !== 'redis+postgres') {
    throw new UsageError('--preload-events needs the Postgres backend (DATABASE_URL and REDIS_URL, or --backend redis+postgres): the embedded backend is not measured at that size');
  }
  return n;
}

/** Seconds the watchdog allows for the load and its VACUUM (ANALYZE), generously. */
export function preloadBudgetSeconds(args: Args): number {
  const n = args.number('preload-events', 0);
  return n > 0 ? 60 + Math.ceil((n / 1_000_000) * 90) : 0;
}

export interface PreloadResult {
  events: number;
  accounts: number;
  /** INSERT … SELECT statements (one transaction each). */
  statements: number;
  /** Seconds for all of them. */
  loadSeconds: number;
  /** VACUUM (ANALYZE) webhook_events afterwards. */
  vacuumSeconds: number;
  /** pg_total_relation_size of the table (its partitions summed when it is partitioned): heap, TOAST and indexes. */
  totalBytes: number;
  /** Average stored payload, bytes (pg_column_size over the first 10,000 rows). */
  payloadBytes: number;
  /** The transaction ids that wrote the events (one per statement): the bench cursor's tick must see them all. */
  txids: string[];
}

/** One two-character piece of a message id: the Crockford pair of 10 bits of `v` (an O(1) bytea lookup). */
const pair = (v: string, shift: number) => `substring($3::bytea from (((${v} >> ${shift}) & 1023) * 2 + 1)::int for 2)`;
/** newId('msg_') in SQL: 10 characters of the millisecond `t`, then 16 of the 80 random bits in r1 and r2 (40 each). */
export const MESSAGE_ID_SQL = `'msg_' || encode(${[
  ['t', 40], ['t', 30], ['t', 20], ['t', 10], ['t', 0],
  ['r1', 30], ['r1', 20], ['r1', 10], ['r1', 0],
  ['r2', 30], ['r2', 20], ['r2', 10], ['r2', 0],
].map(([v, shift]) => pair(v as string, shift as number)).join(' || ')}, 'escape')`;

/*
 * One statement: messages $1..$2 (numbered across statements), three events each, at most $6 rows. A message's id is
 * newId('msg_') of a millisecond before the run ($7 + its number) with 80 random bits; its account is taken round
 * robin; its final event is mostly sms.delivered. The payload is the one INSERT_SMS_SQL (event-outbox.ts) and the
 * ledger writer build, key for key. OFFSET 0 keeps the message subquery out of the join, so each message is made once
 * (not once per event) and its three events share it, streamed in order (no sort, nothing materialised). seq and
 * txid take their defaults (the sequence, this transaction), created_at is now(). Live traffic spreads its events
 * over many group-commit transactions where a statement here is one: the (account_id, txid) and created_at indexes
 * hold fewer distinct keys, which B-tree deduplication stores in about the same space per row.
 */
const INSERT_SQL = `INSERT INTO webhook_events (id, account_id, type, message_key, payload, created_at)
  SELECT ${EVENT_ID_SQL}, msg.account_id, e.type, msg.id,
    jsonb_build_object('messageId', msg.id, 'reference', msg.reference, 'status', e.status, 'to', msg.destination, 'from', msg.source, 'error', e.error),
    now()
  FROM (
    SELECT ${MESSAGE_ID_SQL} AS id,
      ($4::text[])[(g % cardinality($4::text[])) + 1] AS account_id,
      ($5::text[])[(g % cardinality($4::text[])) + 1] AS source,
      -- Half the other accounts pass a reference of their own; the bench's sends carry none.
      CASE WHEN g % cardinality($4::text[]) % 2 = 1 THEN 'ord-' || (r1 % 100000000)::text END AS reference,
      '233' || lpad((r2 % 1000000000)::text, 9, '0') AS destination,
      CASE WHEN f < 0.95 THEN 'delivered' WHEN f < 0.99 THEN 'undelivered' ELSE 'failed' END AS final
    FROM (
      SELECT g, $7::bigint + g AS t, (random() * 1099511627776)::bigint AS r1, (random() * 1099511627776)::bigint AS r2, random() AS f
      FROM generate_series($1::bigint, $2::bigint) g
    ) s
    OFFSET 0
  ) msg CROSS JOIN LATERAL (VALUES
    ('sms.queued', 'queued', NULL),
    ('sms.sent', 'submitted', NULL),
    ('sms.' || msg.final, msg.final, CASE msg.final WHEN 'undelivered' THEN '001' WHEN 'failed' THEN '069' END)
  ) AS e(type, status, error)
  LIMIT $6`;

/** The table's size on disk with its TOAST and indexes; a partitioned table's is the sum of its partitions'. */
const TOTAL_SIZE_SQL = `SELECT (pg_total_relation_size('webhook_events') +
    COALESCE((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('webhook_events') WHERE relid <> 'webhook_events'::regclass), 0))::text AS bytes`;

/**
 * Loads `events` events into webhook_events of the database at `dbUrl`, a share of them for `benchAccountId`, then
 * VACUUM (ANALYZE)s the table. Run before the bench endpoint is created (see the file comment).
 */
export async function preloadEvents(dbUrl: string, benchAccountId: string, events: number, log: (line: string) => void): Promise<PreloadResult> {
  const accounts = [benchAccountId, ...Array.from({ length: OTHER_ACCOUNTS }, () => newId('acc_'))];
  const senders = ['FerryBench', 'ACME', '447700900123', 'ShopCo', 'Bank-OTP', '15550001111', 'Clinic', 'Taxi24'];
  const messages = Math.ceil(events / 3);
  // A millisecond per message, the last one now: ids as made over the time the traffic took.
  const firstMs = Date.now() - messages;
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const txids: string[] = [];
    const started = performance.now();
    let written = 0;
    for (let from = 0; from < messages; from += MESSAGES_PER_STATEMENT) {
      const to = Math.min(messages, from + MESSAGES_PER_STATEMENT) - 1;
      const rows = Math.min(events - written, (to - from + 1) * 3);
      const statementStarted = performance.now();
      await c.query('BEGIN');
      const r = await c.query(INSERT_SQL, [from, to, CROCKFORD_PAIRS, accounts, senders, rows, firstMs]);
      txids.push((await c.query<{ x: string }>('SELECT pg_current_xact_id()::text AS x')).rows[0].x);
      await c.query('COMMIT');
      written += r.rowCount ?? 0;
      // Each statement's cost per event: whether it stays flat as the table grows.
      const perEventUs = ((performance.now() - statementStarted) * 1000) / Math.max(1, r.rowCount ?? 0);
      log(`preload: ${written.toLocaleString('en')} of ${events.toLocaleString('en')} events in ${((performance.now() - started) / 1000).toFixed(1)} s (this statement ${perEventUs.toFixed(1)} µs per event)`);
    }
    const loadSeconds = (performance.now() - started) / 1000;
    const vacuumStarted = performance.now();
    await c.query('VACUUM (ANALYZE) webhook_events');
    const vacuumSeconds = (performance.now() - vacuumStarted) / 1000;
    const totalBytes = Number((await c.query<{ bytes: string }>(TOTAL_SIZE_SQL)).rows[0].bytes);
    const payloadBytes = Number(
      (await c.query<{ b: string }>(`SELECT COALESCE(avg(pg_column_size(payload)), 0)::text AS b FROM (SELECT payload FROM webhook_events LIMIT 10000) s`)).rows[0].b,
    );
    return { events: written, accounts: accounts.length, statements: txids.length, loadSeconds, vacuumSeconds, totalBytes, payloadBytes, txids };
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * Throws unless the cursor of endpoint `endpointId` starts past every preloaded event: each transaction that wrote
 * them is visible in its tick's snapshot (so the stream never reads them; a later tick sees them as well).
 */
export async function checkPreloadRead(dbUrl: string, endpointId: string, txids: readonly string[]): Promise<void> {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const { rows } = await c.query<{ unseen: number }>(
      `SELECT (SELECT count(*) FROM unnest($2::text[]) x WHERE NOT pg_visible_in_snapshot(x::xid8, k.snap))::int AS unseen
         FROM webhook_cursors c JOIN webhook_ticks k ON k.id = c.tick_id WHERE c.endpoint_id = $1`,
      [endpointId, txids],
    );
    if (!rows.length) throw new Error(`the bench endpoint ${endpointId} has no cursor`);
    if (rows[0].unseen > 0) throw new Error(`${rows[0].unseen} of the ${txids.length} preload transactions are not behind the bench endpoint's cursor: the receiver would get them`);
  } finally {
    await c.end().catch(() => undefined);
  }
}
