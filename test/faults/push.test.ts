// Mobile push across a crash and across two instances, against an FCM simulator in this process (it outlives the
// daemon) behind a front that holds each answer a few ms, so that batches are in flight when it matters. A SIGKILL as
// the first devices of a topic arrive (the fan-out still expanding it, usually), a restart on the same storage, a second
// SIGKILL with batches in flight, a last restart: the send completes, every device got its notification, twice only for
// devices of batches a dead process had claimed, never three times, and no device was expanded twice. Two instances on one Postgres and Redis: the send accepted by one is sent by both, each device once.
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { FcmSimulator } from '../../src/sim/push/fcm/fcm-simulator.js';
import { openDb } from '../../src/store/sql/db.js';
import type { Db } from '../../src/store/types.js';
import { accountWithKey, call, startDaemon, startDaemonProcess, testEnv, type TestDaemon } from '../helpers/daemon.js';
import { backendLabel, DATABASE_URL, REDIS_URL } from '../helpers/env.js';
import { until, waitFor } from '../helpers/wait.js';
import { sleep } from './common.js';
import { SlowHttpFront } from './slow-http-front.js';

// Two daemon starts and a restart per case, each send a few seconds.
t.setTimeout(300_000);

const DEVICES = 3000;
const BATCH_SIZE = 100;
const BATCHES_IN_FLIGHT = 2;
/** How long the front holds each FCM answer: with 10 requests of a batch at once, a batch takes ~10 × this. */
const ANSWER_DELAY_MS = 25;

/** Small pages and batches, few of them at once, so that a send of a few thousand devices takes seconds. */
const PUSH_ENV = {
  FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
  FERRY_PUSH_SIMULATOR: 'off',
  FERRY_PUSH_FAN_OUT_PAGE_SIZE: '200',
  FERRY_PUSH_BATCH_SIZE: String(BATCH_SIZE),
  FERRY_PUSH_BATCHES_IN_FLIGHT: String(BATCHES_IN_FLIGHT),
  FERRY_PUSH_CONCURRENCY: '10',
  FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
};

/** The FCM simulator (keeping every send it gets) behind the slow front, with a service account made here. */
async function fcm(t: { teardown(fn: () => unknown): void }) {
  const sim = new FcmSimulator({ recordLimit: 4 * DEVICES });
  await sim.start();
  const front = new SlowHttpFront(sim.url, ANSWER_DELAY_MS);
  await front.start();
  t.teardown(async () => {
    await front.stop();
    await sim.stop();
  });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const serviceAccount = {
    type: 'service_account',
    project_id: 'fault-test-project',
    private_key_id: '0000',
    client_email: 'ferry@fault-test-project.iam.gserviceaccount.com',
    private_key: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    token_uri: sim.tokenUrl,
  };
  sim.addServiceAccount({ clientEmail: serviceAccount.client_email, projectId: serviceAccount.project_id, publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString() });
  // The token endpoint straight (the assertion's audience is the simulator's own address), the sends through the front.
  const endpoints = { fcm: front.url, oauthToken: sim.tokenUrl };
  return { sim, front, serviceAccount, endpoints };
}

/** How many times each token reached the simulator (answered 200). */
function arrivals(sim: FcmSimulator): Map<string, number> {
  const n = new Map<string, number>();
  for (const r of sim.received()) if (r.status === 200) n.set(r.token, (n.get(r.token) ?? 0) + 1);
  return n;
}

/**
 * An account with a key, an app with the service account and the simulator's endpoints, and a topic of `DEVICES`
 * Android devices written to the tables in bulk (registering thousands through the API is not what is tested).
 */
async function pushSetup(d: TestDaemon, name: string, f: Awaited<ReturnType<typeof fcm>>, topic: string) {
  const { account, token } = await accountWithKey(d, name);
  const app = await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'Fault app', fcm: { serviceAccount: f.serviceAccount }, endpoints: f.endpoints } });
  if (app.status !== 201) throw new Error(`creating the app: HTTP ${app.status} ${app.text}`);
  const db = d.daemon.db;
  const prefix = `pdev_${topic}_`;
  await db.query(
    `INSERT INTO push_devices (id, account_id, app_id, token, platform)
     SELECT $1 || lpad(g::text, 6, '0'), $2, $3, 'fault-' || $4 || '-' || g, 'android' FROM generate_series(1, $5::int) g`,
    [prefix, account.id, app.json.data.id, topic, DEVICES],
  );
  await db.query(`INSERT INTO push_topic_subscriptions (account_id, topic, device_id) SELECT $1, $2, $3 || lpad(g::text, 6, '0') FROM generate_series(1, $4::int) g`, [
    account.id,
    topic,
    prefix,
    DEVICES,
  ]);
  await db.query(`INSERT INTO push_topics (account_id, name, size) VALUES ($1, $2, $3)`, [account.id, topic, DEVICES]);
  const tokens = Array.from({ length: DEVICES }, (_, i) => `fault-${topic}-${i + 1}`);
  return { token, tokens };
}

/** Devices of the send's first-round batches that are in more than one of them, and how many devices those hold. */
async function expansion(db: Db, pushId: string): Promise<{ devices: number; twice: number }> {
  const { rows } = await db.query<{ devices: number; twice: number }>(
    `SELECT count(*)::int AS devices, count(*) FILTER (WHERE n > 1)::int AS twice FROM (
       SELECT d->>0 AS device, count(*) AS n FROM outbound_jobs j, jsonb_array_elements(j.payload->'devices') d
       WHERE j.message_id = $1 AND (j.payload->>'round')::int = 1 GROUP BY 1) x`,
    [pushId],
  );
  return rows[0];
}

async function sendCompleted(api: string, token: string, pushId: string) {
  return until(async () => (await call(api, 'GET', `/v1/push/sends/${pushId}?limit=1`, { token })).json?.data, (s) => s?.status === 'completed', 90_000);
}

/** The send as a kill left it: the dead process's claims are run out (the test's stand-in for their two minutes). */
async function afterKill(store: { url: string | null; dataDir: string }, pushId: string) {
  const db = await openDb({ url: store.url, dataDir: store.dataDir, poolSize: 1 });
  try {
    const send = (await db.query<{ status: string; targeted: number; pending: number }>(`SELECT status, targeted, pending FROM push_sends WHERE id = $1`, [pushId])).rows[0];
    const now = Date.now();
    const ranOut = await db.query<{ devices: Array<[string, string, string]> | string }>(
      `UPDATE outbound_jobs SET claimed_until = $2 WHERE message_id = $1 AND pending AND claimed_until > $2 RETURNING payload->'devices' AS devices`,
      [pushId, now - 1],
    );
    const claimed = ranOut.rows.flatMap((j) => (typeof j.devices === 'string' ? (JSON.parse(j.devices) as Array<[string, string, string]>) : j.devices).map((d) => d[1]));
    return { send, batches: ranOut.rowCount ?? 0, claimed };
  } finally {
    await db.close();
  }
}

t.test(`SIGKILL mid-fan-out and mid-send, restarts on the same storage: every device, twice only for batches in flight (${backendLabel})`, async (t) => {
  const f = await fcm(t);
  const { env, store } = await testEnv(PUSH_ENV);
  let restarted: TestDaemon | null = null;
  t.teardown(async () => {
    if (restarted) await restarted.stop();
    else await store.cleanup();
  });
  // The setup in this process (the devices go to the tables, which the embedded database only opens to one process),
  // then the daemon to kill as its own process on the same storage.
  const setup = await startDaemon({}, { env, store });
  const { token, tokens } = await pushSetup(setup, 'pushkill', f, 'killed');
  await setup.stopKeepingStore();

  /** Runs a daemon process until `when()`, then SIGKILLs it: what had arrived by then, and the send as the kill left it. */
  const killed = async (when: () => boolean, what: string, send?: (api: string) => Promise<void>) => {
    const proc = await startDaemonProcess(env);
    t.teardown(() => {
      if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
    });
    await send?.(proc.api);
    await waitFor(when, 60_000, what);
    proc.child.kill('SIGKILL');
    t.equal((await proc.exited).signal, 'SIGKILL', `the daemon was killed once ${what}`);
    // Requests the dead process wrote just before it died may still reach the simulator: a moment for them.
    await sleep(200);
    const got = arrivals(f.sim);
    t.ok(got.size > 0 && got.size < DEVICES, `some but not all devices had their notification at the kill: ${got.size} of ${DEVICES}`);
    return { arrived: got.size, ...(await afterKill(store, pushId)) };
  };

  let pushId = '';
  // The first kill as the first devices arrive: the fan-out is usually still expanding the topic then.
  const first = await killed(
    () => f.sim.counters.sent > 0,
    'the first devices arrived',
    async (api) => {
      const r = await call(api, 'POST', '/v1/push/send', { token, body: { to: { topic: 'killed' }, notification: { title: 'Fault', body: 'killed mid-send' } } });
      t.equal(r.status, 202, r.text);
      t.equal(r.json?.data?.targeted, DEVICES, `the topic's ${DEVICES} devices targeted`);
      pushId = r.json.data.pushId as string;
    },
  );
  t.comment(`first kill: send ${first.send.status}, targeted ${first.send.targeted}, ${first.batches} batches claimed (${first.claimed.length} devices), ${first.arrived} arrived`);
  // The second once another third of the topic arrived from the restarted process: batches in flight.
  const sentBefore = f.sim.counters.sent;
  const second = await killed(() => f.sim.counters.sent >= sentBefore + DEVICES / 3, 'another third of the devices arrived');
  t.comment(`second kill: send ${second.send.status}, targeted ${second.send.targeted}, ${second.batches} batches claimed (${second.claimed.length} devices), ${second.arrived} arrived`);
  t.ok(second.arrived > first.arrived, 'the restarted daemon went on with the send before its own kill');

  const d = (restarted = await startDaemon({}, { env, store }));
  const view = await sendCompleted(d.api, token, pushId);
  t.match(view, { status: 'completed', targeted: DEVICES, sent: DEVICES, failed: 0, invalidated: 0, pending: 0 }, 'the send completed: every device sent');
  // A last look for anything sent late.
  await sleep(300);
  const got = arrivals(f.sim);
  t.same(
    tokens.filter((tk) => !got.has(tk)),
    [],
    `every device reached the simulator (${got.size} of ${DEVICES})`,
  );
  const twice = [...got].filter(([, n]) => n === 2).map(([tk]) => tk);
  const more = [...got].filter(([, n]) => n > 2).map(([tk]) => tk);
  t.same(more, [], 'no device got it three times');
  // Per slot, a batch being sent and the one before it whose outcomes were being written: the pipeline's worker frees
  // a slot for the next batch before the last one's result commits (src/outbound/provider-worker.ts), as docs/push.md
  // states. The check below that names the batches the dead process had claimed is the exact one.
  const bound = 2 * BATCHES_IN_FLIGHT * BATCH_SIZE;
  const claimed = new Set([...first.claimed, ...second.claimed]);
  for (const [n, kill] of [first, second].entries()) {
    const ofThisCrash = twice.filter((tk) => kill.claimed.includes(tk)).length;
    t.ok(ofThisCrash <= bound, `devices that got it twice across crash ${n + 1}: ${ofThisCrash}, at most a batch being sent and one being recorded per slot (2 × ${BATCHES_IN_FLIGHT} × ${BATCH_SIZE})`);
  }
  t.same(
    twice.filter((tk) => !claimed.has(tk)),
    [],
    'each device that got it twice was in a batch a dead process had claimed',
  );
  const { rows } = await d.daemon.db.query<{ targeted: number; sent: number; pending: number }>(`SELECT targeted, sent, pending FROM push_sends WHERE id = $1`, [pushId]);
  t.same(rows[0], { targeted: DEVICES, sent: DEVICES, pending: 0 }, 'push_sends: targeted exactly the topic (no device expanded twice)');
  t.same(await expansion(d.daemon.db, pushId), { devices: DEVICES, twice: 0 }, 'the batches hold each device once');
  t.comment(
    `push, SIGKILL: backend=${backendLabel} devices=${DEVICES} first=${first.send.status}/${first.send.targeted}/${first.arrived} ` +
      `second=${second.send.status}/${second.arrived} claimed=${first.claimed.length}+${second.claimed.length} twice=${twice.length} bound=${bound} per crash`,
  );
});

t.test(
  `two instances share one topic's send: each device once, both instances send (${backendLabel})`,
  { skip: DATABASE_URL && REDIS_URL ? false : 'two instances need DATABASE_URL and REDIS_URL (embedded storage is a single process)' },
  async (t) => {
    const f = await fcm(t);
    const a = await startDaemon(PUSH_ENV);
    const b = await startDaemon({}, a.reuse);
    t.teardown(async () => {
      await b.stopKeepingStore();
      await a.stop();
    });
    const { token, tokens } = await pushSetup(a, 'pushtwo', f, 'shared');

    const r = await call(a.api, 'POST', '/v1/push/send', { token, body: { to: { topic: 'shared' }, notification: { title: 'Shared', body: 'two instances' } } });
    t.equal(r.status, 202, r.text);
    const pushId = r.json.data.pushId as string;
    const view = await sendCompleted(b.api, token, pushId);
    t.match(view, { status: 'completed', targeted: DEVICES, sent: DEVICES, failed: 0, invalidated: 0, pending: 0 }, 'the send completed, read through the other instance');
    await sleep(300);
    const got = arrivals(f.sim);
    t.same(
      tokens.filter((tk) => got.get(tk) !== 1),
      [],
      `each of the ${DEVICES} devices reached the simulator exactly once`,
    );
    t.equal(f.sim.received().length, DEVICES, 'nothing else was sent');
    t.same(await expansion(a.daemon.db, pushId), { devices: DEVICES, twice: 0 }, 'the batches hold each device once');

    // Batches each instance sent: its outbound pipeline's requests to push-fcm (one a batch).
    const batchesOf = async (d: TestDaemon) => {
      const text = (await call(d.admin, 'GET', '/metrics')).text;
      const line = text.split('\n').find((l) => l.startsWith('ferry_outbound_requests_total{') && l.includes('provider="push-fcm"'));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const [fromA, fromB] = [await batchesOf(a), await batchesOf(b)];
    t.ok(fromA > 0 && fromB > 0, `both instances sent batches: A ${fromA}, B ${fromB}`);
    t.ok(fromA + fromB >= DEVICES / BATCH_SIZE, `together at least the ${DEVICES / BATCH_SIZE} batches: ${fromA + fromB}`);
    t.comment(`push, two instances: backend=${backendLabel} devices=${DEVICES} batchesA=${fromA} batchesB=${fromB}`);
  },
);
