// Two instances on one Postgres and Redis, both running the media role, both trunked to one SIP trunk simulator in this
// process: calls placed through one are each dialled exactly once by one of them, read the same through either, hung
// up through the instance that does not carry them, and held to the account's concurrency limit across both.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { VoiceTrunkSimulator } from '../../../src/sim/voice/trunk-simulator.js';
import { accountWithKey, call, startDaemon, startSecondInstance, type TestDaemon } from '../../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';

t.setTimeout(240_000);

const skip = DATABASE_URL && REDIS_URL ? false : 'two instances need DATABASE_URL and REDIS_URL (embedded storage is a single process)';
const FROM = '+233200000101';
const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
const LIMIT = 2;
const LIVE = `('initiated', 'ringing', 'in-progress')`;

t.test('two media instances share calls: each dialled once, read and hung up from either, the account limit held across both', { skip }, async (t) => {
  const sim = new VoiceTrunkSimulator();
  await sim.start({ host: '127.0.0.1', port: 0, transport: 'udp', mediaPortRange: { min: 46800, max: 46899 } });
  t.teardown(() => sim.stop());
  const config = join(tmpdir(), `ferry-voice-instances-${process.pid}.yaml`);
  writeFileSync(config, stringify({ voice: { trunks: [{ name: 'far-end', host: '127.0.0.1', port: sim.port, transport: 'udp', maxCallsPerSecond: 100, optionsIntervalSeconds: 0 }] } }));
  t.teardown(() => rmSync(config, { force: true }));
  const common = {
    FERRY_CONFIG: config,
    FERRY_VOICE_SIMULATOR: 'off',
    FERRY_VOICE_MAX_CONCURRENT_CALLS_PER_ACCOUNT: String(LIMIT),
    FERRY_VOICE_CALLS_PER_SECOND_PER_ACCOUNT: '50',
    FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
    // Instances sharing a database share the key API secrets are hashed with.
    FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('hex'),
  };
  const a = await startDaemon({ ...common, FERRY_VOICE_MEDIA_PORT_MIN: '46400', FERRY_VOICE_MEDIA_PORT_MAX: '46499' });
  // B on its own data folder, as a second machine would be (the folder names the instance's earlier life).
  const b = await startSecondInstance(t, a, { FERRY_VOICE_MEDIA_PORT_MIN: '46500', FERRY_VOICE_MEDIA_PORT_MAX: '46599' }, 'ferry-voice-b-');
  const holder = (dir: string) => readFileSync(join(dir, 'voice-calls.holder'), 'utf8').trim();
  const name = new Map([
    [holder(a.reuse.store.dataDir), 'A'],
    [holder(b.reuse.env.FERRY_DATA_DIR), 'B'],
  ]);
  const { account, token } = await accountWithKey(a, 'voice-instances');
  await a.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  const db = a.daemon.db;

  const place = (d: TestDaemon, to: string, more: Record<string, unknown> = {}) => call(d.api, 'POST', '/v1/voice/calls', { token, body: { from: FROM, to, script: [{ pause: { seconds: 1 } }], ...more } });
  const get = async (d: TestDaemon, id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}`, { token })).json?.data;
  const final = (d: TestDaemon, id: string, ms = 30_000) => until(() => get(d, id), (c) => FINAL.includes(c?.status), ms);
  const ownerOf = async (id: string) => name.get((await db.query<{ owner: string | null }>(`SELECT owner FROM voice_calls WHERE id = $1`, [id])).rows[0]?.owner ?? '') ?? '?';
  const invites = (to: string) => sim.calls().filter((c) => c.to === to);

  await t.test('six calls placed through A: each dialled exactly once, the same through B', async (t) => {
    const numbers = Array.from({ length: 6 }, (_, i) => `+1415555021${i + 1}`);
    const ids: string[] = [];
    for (const to of numbers) {
      const r = await place(a, to);
      t.equal(r.status, 202, r.text);
      ids.push(r.json.data.callId);
    }
    const fromB = [];
    for (const id of ids) fromB.push(await final(b, id));
    t.same(
      fromB.map((c) => c.status),
      ids.map(() => 'completed'),
      'every call completed (read through B)',
    );
    for (const [i, id] of ids.entries()) {
      const fromA = await get(a, id);
      t.same({ status: fromA.status, endedAt: fromA.endedAt, history: fromA.history.length }, { status: fromB[i].status, endedAt: fromB[i].endedAt, history: fromB[i].history.length }, `${id}: A and B show the same`);
      t.equal(fromB[i].history.filter((h: { status: string }) => h.status === 'initiated').length, 1, 'initiated once');
    }
    const seen = sim.calls().filter((c) => numbers.includes(c.to));
    t.equal(seen.length, 6, 'the simulator got exactly six INVITEs for them');
    t.same(new Set(seen.map((c) => c.to)).size, 6, 'one per call');
    t.same(new Set(seen.map((c) => c.callId)).size, 6, 'six distinct SIP dialogs');
    const owners = await Promise.all(ids.map(ownerOf));
    t.ok(
      owners.every((o) => o === 'A' || o === 'B'),
      `each carried by one of the two: ${owners.join('')}`,
    );
    t.comment(`voice, two instances: owners of the six calls ${owners.join('')} (A ${owners.filter((o) => o === 'A').length}, B ${owners.filter((o) => o === 'B').length})`);
  });

  await t.test('hung up through the instance that does not carry the call: ringing, then answered', async (t) => {
    const ringing = await place(a, '+14155550480', { timeoutSeconds: 60 });
    const rid = ringing.json.data.callId as string;
    await until(() => get(a, rid), (c) => c.status === 'ringing');
    const rOwner = await ownerOf(rid);
    const rOther = rOwner === 'A' ? b : a;
    const asked = Date.now();
    const h = await call(rOther.api, 'POST', `/v1/voice/calls/${rid}/hangup`, { token });
    t.equal(h.status, 202, h.text);
    const canceled = await final(rOther, rid, 15_000);
    const ringingMs = Date.now() - asked;
    t.match(canceled, { status: 'canceled', sipCode: 487 }, `carried by ${rOwner}, hung up through the other: canceled`);
    const farRinging = invites('+14155550480');
    t.equal(farRinging.length, 1);
    await until(() => Promise.resolve(farRinging[0].state), (s) => s === 'canceled');
    t.pass('the far end saw the CANCEL');

    const talking = await place(a, '+14155550221', { script: [{ pause: { seconds: 60 } }] });
    const tid = talking.json.data.callId as string;
    await until(() => get(a, tid), (c) => c.status === 'in-progress');
    const tOwner = await ownerOf(tid);
    const tOther = tOwner === 'A' ? b : a;
    const asked2 = Date.now();
    t.equal((await call(tOther.api, 'POST', `/v1/voice/calls/${tid}/hangup`, { token })).status, 202);
    const hung = await final(tOther, tid, 15_000);
    const answeredMs = Date.now() - asked2;
    t.match(hung, { status: 'completed', error: { code: 'HANGUP_REQUESTED' } }, `carried by ${tOwner}, hung up through the other: completed, HANGUP_REQUESTED`);
    const far = invites('+14155550221');
    t.equal(far.length, 1);
    await until(() => Promise.resolve(far[0].state), (s) => s === 'ended');
    t.equal(far[0].endedBy, 'caller', 'Ferry sent the far end a BYE');
    t.comment(`voice, hangup through the other instance: ringing (owner ${rOwner}) canceled ${ringingMs} ms after the request, answered (owner ${tOwner}) ended ${answeredMs} ms after it`);
  });

  await t.test(`five long calls, limit ${LIMIT} per account on both: never more than ${LIMIT} up at once, the rest wait and all run`, async (t) => {
    const numbers = Array.from({ length: 5 }, (_, i) => `+1415555031${i + 1}`);
    const ids: string[] = [];
    for (const to of numbers) {
      const r = await place(a, to, { script: [{ pause: { seconds: 3 } }] });
      t.equal(r.status, 202, r.text);
      ids.push(r.json.data.callId);
    }
    let maxDb = 0;
    let maxFar = 0;
    let queuedWhileFull = 0;
    let samples = 0;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await db.query<{ live: number; queued: number; open: number }>(
        `SELECT count(*) FILTER (WHERE status IN ${LIVE})::int AS live, count(*) FILTER (WHERE status = 'queued')::int AS queued,
           count(*) FILTER (WHERE status NOT IN ('completed', 'busy', 'no-answer', 'failed', 'canceled'))::int AS open
         FROM voice_calls WHERE id = ANY($1::text[])`,
        [ids],
      );
      const farLive = sim.calls().filter((c) => numbers.includes(c.to) && c.endedAt === null).length;
      samples++;
      maxDb = Math.max(maxDb, rows[0].live);
      maxFar = Math.max(maxFar, farLive);
      if (rows[0].live === LIMIT && rows[0].queued > 0) queuedWhileFull++;
      if (rows[0].open === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    t.ok(maxDb <= LIMIT, `at most ${LIMIT} live in the database at once (most seen: ${maxDb}, ${samples} samples)`);
    t.ok(maxFar <= LIMIT, `at most ${LIMIT} up at the far end at once (most seen: ${maxFar})`);
    t.equal(maxDb, LIMIT, 'the limit was reached');
    t.ok(queuedWhileFull > 0, `the others waited queued meanwhile (${queuedWhileFull} samples)`);
    const ended = await Promise.all(ids.map((id) => get(b, id)));
    t.same(
      ended.map((c) => c.status),
      ids.map(() => 'completed'),
      'all five ran to the end',
    );
    t.equal(sim.calls().filter((c) => numbers.includes(c.to)).length, 5, 'each dialled once');
    const owners = await Promise.all(ids.map(ownerOf));
    t.comment(`voice, limit across instances: max live db=${maxDb} far=${maxFar}, owners ${owners.join('')}, ${samples} samples`);
  });
});
