// The raw clicks are partitioned by time (migration 0054): a database with clicks keeps them and pages them as before,
// new clicks land in their day's partition, a click written twice still conflicts, and retention drops whole partitions.
import pino from 'pino';
import t from 'tap';
import { CHANNEL_MODULES } from '../../../src/channels/index.js';
import { clickIdTime, ShortlinkService } from '../../../src/channels/shortlink/shortlink-service.js';
import { bootOrder, declaredTables, migrationFolders } from '../../../src/platform/module-order.js';
import { loadMigrations, migrate } from '../../../src/store/sql/migrate.js';
import { RangePartitions, type PartitionedTable } from '../../../src/store/sql/range-partitions.js';
import { Retention } from '../../../src/store/sql/retention.js';
import { newId } from '../../../src/util/ids.js';
import { testDb } from '../../helpers/db.js';
import { backendLabel } from '../../helpers/env.js';
import { retentionConfig } from '../../helpers/retention-config.js';

const log = pino({ level: 'silent' });
const DAY = 86_400_000;
const VERSION = 54;
const TABLES = declaredTables(bootOrder(CHANNEL_MODULES));
const CLICKS = TABLES.find((x) => x.name === 'shortlink_clicks') as PartitionedTable;
const iso = (ms: number) => new Date(ms).toISOString();
const day = (ms: number) => iso(ms).slice(0, 10).replace(/-/g, '');

t.test('a click id carries its time', async (t) => {
  const at = Date.UTC(2026, 10, 1, 12, 30, 5, 123);
  t.equal(clickIdTime(newId('clk_', at)), at);
  t.equal(clickIdTime('c_old'), null);
});

t.test(`shortlink_clicks partitioned by time: migrated with its rows, paged across partitions, dropped whole (${backendLabel})`, async (t) => {
  t.ok(CLICKS?.partitions, 'shortlink_clicks is declared partitioned');
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const all = loadMigrations(migrationFolders(CHANNEL_MODULES));
  t.ok(all.some((m) => m.version === VERSION && m.name === 'shortlink_click_partitions'), 'the migration is loaded');
  await migrate(db, all.filter((m) => m.version < VERSION));

  const now = Date.now();
  const click = (at: number) => ({ id: newId('clk_', at), at });
  const insert = (rows: Array<{ id: string; at: number }>) =>
    db.query<{ id: string }>(
      `INSERT INTO shortlink_clicks (link_id, id, account_id, at, device, bot, method, outcome)
       SELECT 'lnk_p', u.id, 'acc_p', u.at, 'desktop', false, 'GET', 'redirect' FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at)
       ON CONFLICT DO NOTHING RETURNING id`,
      [rows.map((r) => r.id), rows.map((r) => iso(r.at))],
    );
  // Clicks from before the migration: ten and five days old, and one from today.
  const before = [click(now - 10 * DAY), click(now - 5 * DAY), click(now - 60_000)];
  await insert(before);
  await migrate(db, all);

  const parts = new RangePartitions(db, log);
  t.same((await parts.list('shortlink_clicks')).map((p) => [p.name, p.fromMs]), [['shortlink_clicks_p_before', null]], 'the table so far is the first partition');
  const dflt = await db.query(`SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass('shortlink_clicks_default') AND inhparent = to_regclass('shortlink_clicks')`);
  t.equal(dflt.rows.length, 1, 'a default partition');
  const adopted = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'shortlink_clicks_p_before'`);
  t.equal(adopted.rows[0].n, 1, 'the first partition has one index: its key, adopted by the parent');

  // New clicks land in their day's partition.
  await parts.ensure(CLICKS, 1, now);
  const tomorrow = click(Math.floor(now / DAY) * DAY + DAY + 3_600_000);
  const today = click(now);
  await insert([today, tomorrow]);
  const where = async (id: string) => (await db.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM shortlink_clicks WHERE id = $1`, [id])).rows[0]?.p;
  t.equal(await where(today.id), 'shortlink_clicks_p_before', "today's click: the first partition, which covers today");
  t.equal(await where(tomorrow.id), `shortlink_clicks_p${day(tomorrow.at)}`, "tomorrow's click: tomorrow's partition");
  t.equal((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM shortlink_clicks_default`)).rows[0].n, 0, 'nothing in the default partition');
  t.equal((await insert([today, tomorrow, before[0]])).rows.length, 0, 'a click written again (a retried batch) conflicts on (link_id, id, at)');

  // Paging newest first: the cursor's time bounds the read, and the pages still hold every click, old ones included.
  const service = new ShortlinkService(db, ...([null, null, null, null, ''] as unknown as [never, never, never, never, string]));
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const rows = await service.clicks('acc_p', 'lnk_p', cursor, 2);
    seen.push(...rows.map((r) => r.id));
    if (rows.length < 2) break;
    cursor = rows[rows.length - 1].id;
  }
  t.same(seen, [tomorrow, today, ...before].sort((a, b) => b.at - a.at).map((c) => c.id), 'every click, newest first, across partitions');
  t.same(await service.clicks('acc_other', 'lnk_p', undefined, 10), [], "never another account's");

  // Twenty days on, retention fourteen: the first partition (up to tomorrow) and the days before six days from now
  // are past it; a click from eighteen days on is not.
  const clock = now + 20 * DAY;
  await parts.ensure(CLICKS, 1, clock);
  const recent = click(now + 18 * DAY);
  await insert([recent]);
  const r = new Retention({ db, log, config: retentionConfig({ shortlink: 14 }), tables: TABLES, partitions: parts, clock: () => clock });
  const out = await r.runOnce();
  t.ok(out && 'shortlink_clicks' in out, 'retention reports the table');
  const left = (await parts.list('shortlink_clicks')).map((p) => p.name);
  t.notOk(left.includes('shortlink_clicks_p_before'), 'the first partition was dropped whole');
  t.ok(left.every((name) => name >= `shortlink_clicks_p${day(clock - 15 * DAY)}`), `only partitions inside the retention remain: ${left.join(', ')}`);
  t.same((await service.clicks('acc_p', 'lnk_p', undefined, 10)).map((c) => c.id), [recent.id], 'the clicks past the retention are gone, the newer one stays');
});
