// A module declares its tables: the core's retention purges them and its table maintenance vacuums them, with no
// core file naming them (the fixture module's table exists only in its own migration folder).
import pino from 'pino';
import t from 'tap';
import type { RetentionConfig } from '../../src/config/schema.js';
import { declaredTables, migrationFolders } from '../../src/platform/module-order.js';
import { loadMigrations, migrate } from '../../src/store/sql/migrate.js';
import { Retention } from '../../src/store/sql/retention.js';
import { checkTables } from '../../src/store/sql/table-declaration.js';
import { TableMaintenance } from '../../src/store/sql/table-maintenance.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { archiveModule } from './fixtures/archive-module.js';

const log = pino({ level: 'silent' });
const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T00:00:00Z');

t.test(`a module's declared table is purged and vacuumed without a core edit (${backendLabel})`, async (t) => {
  // The core's migrations and the fixture module's only: no product is needed for either to apply.
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  await migrate(db, loadMigrations(migrationFolders([archiveModule])));
  const tables = declaredTables([archiveModule]);
  t.ok(tables.some((x) => x.name === 'archive_items'), 'the module’s table joins the declared list');

  const item = (id: string, state: string, at: number) => db.query(`INSERT INTO archive_items (id, state, touched_at) VALUES ($1, $2, $3)`, [id, state, at]);
  await item('old_done_1', 'done', NOW - 100 * DAY);
  await item('old_done_2', 'done', NOW - 95 * DAY);
  await item('old_open', 'open', NOW - 100 * DAY);
  await item('young_done', 'done', NOW - 10 * DAY);

  const config: RetentionConfig = {
    days: 90,
    outbound: null,
    webhooks: null,
    sms: null,
    messenger: null,
    email: null,
    ussd: null,
    shortlink: null,
    logs: null,
    intervalSeconds: 0,
    batchRows: 1,
    maxRowsPerPass: 100,
  };
  const purged = await new Retention({ db, log, config, tables, clock: () => NOW }).runOnce();
  t.same(purged, { archive_items: 2 }, 'its done rows past retention.days are purged (its family is not in the config)');
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM archive_items ORDER BY id`);
  t.same(rows.map((r) => r.id), ['old_open', 'young_done'], 'an open row and a young one are kept');

  const vacuumed: string[] = [];
  const m = new TableMaintenance({ db, log, tables, intervalSeconds: 0, minDeadRows: 0, onVacuum: (table) => vacuumed.push(table) });
  await m.runOnce();
  t.ok(vacuumed.includes('archive_items'), 'table maintenance vacuums it');
  const without = new TableMaintenance({ db, log, tables: declaredTables([]), intervalSeconds: 0, minDeadRows: 0 });
  t.notOk((await without.runOnce()).some((r) => r.table === 'archive_items'), 'and only because the module declares it');
});

t.test('declarations are checked: identifiers only, each table once, children with their key', async (t) => {
  t.throws(() => declaredTables([archiveModule, archiveModule]), /table archive_items: declared twice/);
  t.throws(() => declaredTables([{ tables: [{ name: 'messages' }] }]), /table messages: declared twice/, 'a module cannot redeclare a core table');
  t.throws(() => checkTables([{ name: 'x; DROP TABLE accounts' }]), /not a lower-case SQL identifier/);
  t.throws(() => checkTables([{ name: 'x', retention: { family: 'days', ageColumn: 'at', ageUnit: 'ms' } }]), /family days is not a valid family name/, 'a family cannot shadow a retention setting');
  t.throws(() => checkTables([{ name: 'x', retention: { family: 'x', ageColumn: 'at', ageUnit: 'ms', children: [{ table: 'y', column: 'x_id' }] } }]), /children need the key/);
  t.throws(() => checkTables([{ name: 'x', retention: { family: 'x', ageColumn: 'at desc', ageUnit: 'ms' } }]), /column at desc is not an identifier/);
});
