// Sends leave after push.retentionDays once completed, their outcomes with them; sends still running stay whatever
// their age. Ids are made at the send's time, as the send path makes them (the purge bounds its scan by them).
import t from 'tap';
import { SendsPurge } from '../../../src/channels/push/sends-purge.js';
import { PUSH_SEND_ID_PREFIX } from '../../../src/channels/push/push-ids.js';
import { newId } from '../../../src/util/ids.js';
import { testDb } from '../../helpers/db.js';
import { backendLabel } from '../../helpers/env.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T00:00:00Z');

t.test(`completed sends past push.retentionDays are purged with their outcomes (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const send = async (name: string, ageDays: number, status: string) => {
    const at = NOW - ageDays * DAY;
    const id = newId(PUSH_SEND_ID_PREFIX, at);
    await db.query(
      `INSERT INTO push_sends (id, account_id, target_kind, target, message, status, created_at) VALUES ($1, 'acc_p', 'topic', $2, '{}', $3, $4)`,
      [id, name, status, new Date(at).toISOString()],
    );
    await db.query(`INSERT INTO push_send_outcomes (send_id, device_id, status, error) VALUES ($1, 'pdev_x', 'failed', 'X')`, [id]);
    return id;
  };
  const oldDone = [await send('old-1', 40, 'completed'), await send('old-2', 31, 'completed'), await send('old-3', 35, 'completed')];
  const oldRunning = await send('old-running', 40, 'sending');
  const young = await send('young', 10, 'completed');

  const purge = new SendsPurge({ db, retentionDays: 30, batchRows: 2, clock: () => NOW });
  t.equal(await purge.runOnce(), 3, 'the three completed sends past 30 days, in batches of 2');
  const left = (await db.query<{ id: string }>(`SELECT id FROM push_sends ORDER BY id`)).rows.map((r) => r.id);
  t.same(left, [oldRunning, young].sort());
  const outcomes = (await db.query<{ send_id: string }>(`SELECT send_id FROM push_send_outcomes ORDER BY send_id`)).rows.map((r) => r.send_id);
  t.same(outcomes, [oldRunning, young].sort(), 'their outcomes went with them');
  t.notOk(oldDone.some((id) => left.includes(id)));
  t.equal(await purge.runOnce(), 0, 'nothing more');
});
