// The request logs are partitioned by time (migration 0053): a database with rows keeps them and serves them as before,
// new rows land in their day's partition, and retention drops a whole partition past logs.retentionDays.
import pino from 'pino';
import t from 'tap';
import type { AccountService } from '../../../src/accounts/account-service.js';
import type { LogsConfig } from '../../../src/channels/logs/config.js';
import { CHANNEL_MODULES } from '../../../src/channels/index.js';
import { LogsService } from '../../../src/channels/logs/logs-service.js';
import { RequestLogStore, requestIdTime, type RequestLogInsert } from '../../../src/channels/logs/request-log-store.js';
import { REQUEST_LOGS_TABLE } from '../../../src/channels/logs/storage.js';
import type { FerryConfig } from '../../../src/config/schema.js';
import { migrationFolders } from '../../../src/platform/module-order.js';
import { loadMigrations, migrate } from '../../../src/store/sql/migrate.js';
import { RangePartitions } from '../../../src/store/sql/range-partitions.js';
import { newId } from '../../../src/util/ids.js';
import { testDb } from '../../helpers/db.js';
import { backendLabel } from '../../helpers/env.js';

const log = pino({ level: 'silent' });
const DAY = 86_400_000;
const VERSION = 53;
const ACCOUNT = 'acc_parts';

function entry(requestId: string, at: number): RequestLogInsert {
  return {
    requestId,
    at,
    method: 'GET',
    route: '/v1/account',
    path: '/v1/account',
    product: 'account',
    status: 200,
    latencyMs: 1,
    keyId: 'key_parts',
    accountId: ACCOUNT,
    clientIp: '127.0.0.1',
    userAgent: null,
    idempotencyKey: null,
    errorCode: null,
    requestBody: '{"a":1}',
    responseBody: null,
  };
}

t.test('a request id carries its time', async (t) => {
  const at = Date.UTC(2026, 10, 1, 12, 30);
  t.equal(requestIdTime(newId('req_', at)), at);
  t.equal(requestIdTime('req_old1'), null, 'an id not made by newId: no time');
  t.equal(requestIdTime(newId('msg_', at)), null, 'another prefix: no time');
});

t.test(`request_logs partitioned by time: migrated with its rows, new rows in range partitions, whole partitions dropped (${backendLabel})`, async (t) => {
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const all = loadMigrations(migrationFolders(CHANNEL_MODULES));
  t.ok(all.some((m) => m.version === VERSION && m.name === 'request_log_partitions'), 'the migration is loaded');
  await migrate(db, all.filter((m) => m.version < VERSION));

  // Rows written before the migration, by the daemon as it was (no created_at): one ten days old, one from today.
  const now = Date.now();
  const oldId = newId('req_', now - 10 * DAY);
  const todayId = newId('req_', now - 60_000);
  await db.query(
    `INSERT INTO request_logs (request_id, at, method, route, path, product, status, latency_ms, key_id, account_id, request_body)
     VALUES ($1, $2, 'GET', '/v1/account', '/v1/account', 'account', 200, 1, 'key_parts', $4, '{"old":1}'),
            ($3, $5, 'POST', '/v1/sms/send', '/v1/sms/send', 'sms', 201, 2, 'key_parts', $4, NULL)`,
    [oldId, now - 10 * DAY, todayId, ACCOUNT, now - 60_000],
  );
  await migrate(db, all);

  const parts = new RangePartitions(db, log);
  const store = new RequestLogStore(db);
  const kind = await db.query<{ relkind: string }>(`SELECT relkind::text AS relkind FROM pg_class WHERE oid = to_regclass('request_logs')`);
  t.equal(kind.rows[0].relkind, 'p', 'request_logs is a partitioned table');
  t.same((await parts.list('request_logs')).map((p) => [p.name, p.fromMs]), [['request_logs_p_before', null]], 'the table so far is the first partition');
  const first = (await parts.list('request_logs'))[0];
  t.equal(first.toMs, Math.floor(now / DAY) * DAY + DAY, 'it reaches tomorrow (UTC)');
  const dflt = await db.query(`SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass('request_logs_default') AND inhparent = to_regclass('request_logs')`);
  t.equal(dflt.rows.length, 1, 'a default partition');
  const checks = await db.query(`SELECT 1 FROM pg_constraint WHERE conname = 'request_logs_p_before_range'`);
  t.equal(checks.rows.length, 0, 'the CHECK that spared the ATTACH its scan is gone');

  // The rows are kept and read as before: the search, the live tail, one request by its id (ten days old).
  const found = await store.search(ACCOUNT, {}, 10);
  t.same(found.rows.map((r) => r.requestId), [todayId, oldId], 'the search returns both, newest first');
  const since = await store.search(ACCOUNT, { from: now - 11 * DAY }, 10);
  t.equal(since.rows.length, 2, 'a search from a time keeps the rows from before the migration');
  const old = await store.get(ACCOUNT, oldId);
  t.equal(old?.requestBody, '{"old":1}', 'a request from before the migration is found by its id');
  t.equal(old?.at, new Date(now - 10 * DAY).toISOString());
  t.equal(await store.get('acc_other', oldId), null, "never another account's");
  t.same((await store.after(ACCOUNT, '0', 10)).map((r) => r.requestId), [oldId, todayId], 'the live tail');

  // New rows: the writer's insert sets created_at from `at`, so a row lands in the partition of its request's day.
  await parts.ensure(REQUEST_LOGS_TABLE, 1, now);
  const newNow = newId('req_', now);
  const tomorrow = Math.floor(now / DAY) * DAY + DAY + 3_600_000;
  const newTomorrow = newId('req_', tomorrow);
  await store.insert([entry(newNow, now), entry(newTomorrow, tomorrow)]);
  const where = async (id: string) => (await db.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM request_logs WHERE request_id = $1`, [id])).rows[0]?.p;
  t.equal(await where(newNow), 'request_logs_p_before', "today's row: the first partition, which covers today");
  t.equal(await where(newTomorrow), `request_logs_p${new Date(tomorrow).toISOString().slice(0, 10).replace(/-/g, '')}`, "tomorrow's row: tomorrow's partition");
  t.equal((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM request_logs_default`)).rows[0].n, 0, 'nothing in the default partition');
  t.equal((await store.get(ACCOUNT, newTomorrow))?.requestId, newTomorrow, 'a new row by its id');
  const ids = (await store.search(ACCOUNT, {}, 10)).rows.map((r) => Number(r.seq));
  t.equal(new Set(ids).size, 4, 'ids stay unique across partitions (one sequence)');

  // Twenty days on, retention fourteen: the first partition (up to tomorrow) and the days up to six days from now are
  // past it; a row from eighteen days on is not.
  const clock = now + 20 * DAY;
  await parts.ensure(REQUEST_LOGS_TABLE, 1, clock);
  const recentId = newId('req_', now + 18 * DAY);
  await store.insert([entry(recentId, now + 18 * DAY)]);
  const logs = new LogsService({
    db,
    store,
    partitions: parts,
    accounts: {} as unknown as AccountService,
    config: {} as unknown as FerryConfig,
    section: { retentionDays: 14 } as LogsConfig,
    otpLimits: { requestsPerHour: 1, resendCooldownSeconds: 1 },
    now: () => clock,
  });
  await logs.purgeExpired();
  const left = (await parts.list('request_logs')).map((p) => p.name);
  t.notOk(left.includes('request_logs_p_before'), 'the first partition was dropped whole');
  t.ok(left.every((name) => name > `request_logs_p${new Date(clock - 14 * DAY - DAY).toISOString().slice(0, 10).replace(/-/g, '')}`), `only partitions inside the retention remain: ${left.join(', ')}`);
  t.same((await store.search(ACCOUNT, {}, 10)).rows.map((r) => r.requestId), [recentId], 'the rows past the retention are gone, the newer one stays');
  t.equal(await store.get(ACCOUNT, oldId), null);
  t.equal((await store.get(ACCOUNT, recentId))?.requestId, recentId);
  t.equal(await logs.purgeExpired(), 0, 'a second pass drops nothing');
});
