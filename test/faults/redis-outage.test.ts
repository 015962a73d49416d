// A private Redis killed for a few seconds under SMPP and REST load, then restarted empty on the same port: new
// work gets clear errors (503 / ESME_RSYSERR / ESME_RTHROTTLED) or is accepted durably in the ledger, nothing
// accepted is lost, and traffic resumes by itself.
import t from 'tap';
import { accountWithKey, call, startDaemon, gatewayOf } from '../helpers/daemon.js';
import { REDIS_URL, backendLabel } from '../helpers/env.js';
import { CustomerClient } from '../smpp/customer/customer-client.js';
import { DEST, countBy, duplicates, settle, simulator, sleep, smppLoad, upstreamConfig, type LoadResult } from './common.js';
import { PrivateRedis, freePort } from './redis-server.js';

const OUTAGE_MS = 5000;

t.setTimeout(200_000);

t.test(`Redis down for ${OUTAGE_MS / 1000} s under load (${backendLabel})`, { skip: REDIS_URL ? false : 'needs REDIS_URL (the Redis backend)' }, async (t) => {
  const redis = new PrivateRedis(await freePort());
  await redis.start();
  t.teardown(() => redis.kill());
  const sim = await simulator(t);
  // A short reconcile pass: messages lost with the emptied Redis queue come back within seconds.
  const d = await startDaemon({
    REDIS_URL: redis.url,
    FERRY_CONFIG: upstreamConfig(sim.port),
    FERRY_SMPP_SIMULATOR_ENABLED: 'off',
    FERRY_DISPATCH_RECONCILE_SECONDS: '2',
    FERRY_DISPATCH_RECONCILE_STALE_SECONDS: '3',
  });
  t.teardown(() => d.stop());
  const smppPort = Number(d.daemon.addresses.smpp.split(':').pop());
  const { account } = await d.daemon.accounts.create({ name: 'outage', smppPassword: 'secret1' });
  const { token } = await accountWithKey(d, 'outage-rest');
  void account;

  let client: CustomerClient | null = null;
  const ensureClient = async (): Promise<void> => {
    const { client: c, resp } = await CustomerClient.bound(smppPort, 'transceiver', 'outage', 'secret1');
    if (resp.command_status !== 0) throw new Error(`bind refused ${resp.command_status}`);
    client = c;
  };
  await ensureClient();

  let phase = 'before' as 'before' | 'outage' | 'after';
  const phaseNow = (): string => phase;
  let stopped = false;
  const smpp: LoadResult = { acked: new Map(), refused: new Map(), unanswered: 0 };
  const rest = { acked: new Map<string, string>(), codes: {} as Record<string, number> };
  let restartedAt = 0;
  let firstOkAfter = 0;
  const smppRun = smppLoad(() => client, { tag: 'rds', workers: 4, max: 50_000, maxMs: 60_000, stop: () => stopped, pauseMs: 10, timeoutMs: 3000 }, smpp);
  const restRun = (async () => {
    let n = 0;
    const until = Date.now() + 60_000;
    while (!stopped && Date.now() < until) {
      const text = `rest-rds ${n++}`;
      try {
        const r = await call(d.api, 'POST', '/v1/sms/send', { token, body: { to: `+${DEST}`, from: 'Ferry', message: text } });
        const key = `${phase}:${r.status}${r.json?.code ? ' ' + r.json.code : ''}`;
        rest.codes[key] = (rest.codes[key] ?? 0) + 1;
        if (r.status === 200) {
          rest.acked.set(r.json.data.messageId, text);
          if (phaseNow() === 'after' && !firstOkAfter) firstOkAfter = Date.now();
        }
      } catch {
        rest.codes[`${phase}:network`] = (rest.codes[`${phase}:network`] ?? 0) + 1;
      }
      await sleep(20);
    }
  })();

  await sleep(2000);
  const smppBefore = smpp.acked.size;
  phase = 'outage';
  await redis.kill();
  const killedAt = Date.now();
  await sleep(OUTAGE_MS);
  const smppDuring = smpp.acked.size - smppBefore;
  await redis.start();
  phase = 'after';
  restartedAt = Date.now();
  // Traffic must resume by itself: the SMPP bind may or may not have survived; a customer would rebind.
  const until = Date.now() + 30_000;
  while (!firstOkAfter && Date.now() < until) {
    if ((client as CustomerClient | null)?.socket.destroyed) await ensureClient().catch(() => undefined);
    await sleep(100);
  }
  const smppAfterStart = smpp.acked.size;
  await sleep(3000);
  stopped = true;
  await Promise.all([smppRun, restRun]);
  const smppResumed = smpp.acked.size > smppAfterStart;
  await (client as CustomerClient | null)?.close().catch(() => undefined);

  t.ok(firstOkAfter > 0, `REST accepts again ${firstOkAfter - restartedAt} ms after Redis is back`);
  t.ok(smppResumed, 'SMPP accepts again after Redis is back');
  const all = [...smpp.acked.keys(), ...rest.acked.keys()];
  const t0 = Date.now();
  const { open, missing, statuses } = await settle(gatewayOf(d.daemon).ledger, all, 30_000);
  t.same(missing.slice(0, 5), [], `every accepted message is in the ledger (${missing.length} missing)`);
  t.same(open.slice(0, 5), [], `every accepted message ends final (${open.length} open after ${Date.now() - t0} ms)`);
  const dups = duplicates(sim, 'rds') + duplicates(sim, 'rest-rds');
  t.comment(
    `redis-outage: backend=${backendLabel} outage=${OUTAGE_MS}ms accepted=${all.length} (smpp: ${smppBefore} before, ${smppDuring} during the outage, ${smpp.acked.size - smppBefore - smppDuring} after) ` +
      `lost=${missing.length + open.length} duplicates=${dups} restRecovery=${firstOkAfter ? firstOkAfter - restartedAt : -1}ms allFinalAfter=${Date.now() - t0}ms ` +
      `smppRefused=${JSON.stringify(Object.fromEntries([...smpp.refused].map(([k, v]) => ['0x' + k.toString(16), v])))} smppUnanswered=${smpp.unanswered} ` +
      `rest=${JSON.stringify(rest.codes)} statuses=${JSON.stringify(countBy(statuses.values()))} killedAt+${restartedAt - killedAt}ms`,
  );
});
