// Every Postgres backend connection of the daemon killed (pg_terminate_backend) under SMPP and REST load, twice:
// clear errors (ESME_RSYSERR / 503) while the pool reconnects, nothing accepted is lost, traffic resumes by itself.
import pg from 'pg';
import t from 'tap';
import { accountWithKey, call, startDaemon, testEnv, gatewayOf } from '../helpers/daemon.js';
import { DATABASE_URL, backendLabel } from '../helpers/env.js';
import { CustomerClient } from '../smpp/customer/customer-client.js';
import { DEST, countBy, duplicates, settle, simulator, sleep, smppLoad, upstreamConfig, type LoadResult } from './common.js';

t.setTimeout(200_000);

t.test(`Postgres connections killed under load (${backendLabel})`, { skip: DATABASE_URL ? false : 'needs DATABASE_URL (the Postgres backend)' }, async (t) => {
  const sim = await simulator(t);
  // A private application_name marks this daemon's connections, so tests running alongside are not hit.
  const appName = `ferry-pgkill-${process.pid}`;
  const { env, store } = await testEnv({ FERRY_CONFIG: upstreamConfig(sim.port), FERRY_SMPP_SIMULATOR_ENABLED: 'off' });
  const url = new URL(store.url!);
  url.searchParams.set('application_name', appName);
  const d = await startDaemon({}, { env: { ...env, DATABASE_URL: url.toString() }, store });
  t.teardown(() => d.stop());
  const smppPort = Number(d.daemon.addresses.smpp.split(':').pop());
  await d.daemon.accounts.create({ name: 'pgkill', smppPassword: 'secret1' });
  const { token } = await accountWithKey(d, 'pgkill-rest');

  let client: CustomerClient | null = null;
  const bind = async (): Promise<void> => {
    const { client: c, resp } = await CustomerClient.bound(smppPort, 'transceiver', 'pgkill', 'secret1');
    if (resp.command_status !== 0) throw new Error(`bind refused ${resp.command_status}`);
    client = c;
  };
  await bind();

  let stopped = false;
  const smpp: LoadResult = { acked: new Map(), refused: new Map(), unanswered: 0 };
  const rest = { acked: new Map<string, string>(), codes: {} as Record<string, number> };
  let lastKill = 0;
  let firstOkAfterKill = 0;
  const smppRun = smppLoad(() => client, { tag: 'pgk', workers: 4, max: 50_000, maxMs: 60_000, stop: () => stopped, pauseMs: 5, timeoutMs: 5000 }, smpp);
  const restRun = (async () => {
    let n = 0;
    const until = Date.now() + 60_000;
    while (!stopped && Date.now() < until) {
      const text = `rest-pgk ${n++}`;
      try {
        const r = await call(d.api, 'POST', '/v1/sms/send', { token, body: { to: `+${DEST}`, from: 'Ferry', message: text } });
        const key = `${r.status}${r.json?.code ? ' ' + r.json.code : ''}`;
        rest.codes[key] = (rest.codes[key] ?? 0) + 1;
        if (r.status === 200) {
          rest.acked.set(r.json.data.messageId, text);
          if (lastKill && !firstOkAfterKill) firstOkAfterKill = Date.now();
        }
      } catch {
        rest.codes.network = (rest.codes.network ?? 0) + 1;
      }
      await sleep(10);
    }
  })();

  // Kill the daemon's backends, twice.
  const admin = new pg.Client({ connectionString: DATABASE_URL! });
  await admin.connect();
  t.teardown(() => admin.end());
  const recoveries: number[] = [];
  let killed = 0;
  for (let round = 0; round < 2; round++) {
    await sleep(1500);
    const r = await admin.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1`,
      [appName],
    );
    killed += r.rows.filter((x) => x.ok).length;
    lastKill = Date.now();
    firstOkAfterKill = 0;
    const until = Date.now() + 30_000;
    while (!firstOkAfterKill && Date.now() < until) {
      if ((client as CustomerClient | null)?.socket.destroyed) await bind().catch(() => undefined);
      await sleep(50);
    }
    recoveries.push(firstOkAfterKill ? firstOkAfterKill - lastKill : -1);
  }
  const smppBeforeEnd = smpp.acked.size;
  await sleep(2000);
  stopped = true;
  await Promise.all([smppRun, restRun]);
  await (client as CustomerClient | null)?.close().catch(() => undefined);

  t.ok(killed > 0, `${killed} backend connections terminated`);
  t.ok(recoveries.every((ms) => ms >= 0), `REST accepts again after each kill (${recoveries.join(', ')} ms)`);
  t.ok(smpp.acked.size > smppBeforeEnd, 'SMPP still accepts at the end');
  const all = [...smpp.acked.keys(), ...rest.acked.keys()];
  const t0 = Date.now();
  // A receipt whose ledger write failed is refused and the SMSC offers it again; a correlation write that failed
  // is kept in memory and rewritten: so every accepted message must end final.
  const { open, missing, statuses } = await settle(gatewayOf(d.daemon).ledger, all, 60_000);
  t.same(missing.slice(0, 5), [], `every accepted message is in the ledger (${missing.length} missing)`);
  t.same(open.slice(0, 5), [], `every accepted message ends final (${open.length} open, ${sim.stats.receiptsFailed} receipts refused and offered again)`);
  const dups = duplicates(sim, 'pgk') + duplicates(sim, 'rest-pgk');
  t.comment(
    `postgres-connections: backend=${backendLabel} killed=${killed} accepted=${all.length} lost=${missing.length} open=${open.length} duplicates=${dups} ` +
      `recovery=${recoveries.join('/')}ms allFinalAfter=${Date.now() - t0}ms smppRefused=${JSON.stringify(Object.fromEntries([...smpp.refused].map(([k, v]) => ['0x' + k.toString(16), v])))} ` +
      `smppUnanswered=${smpp.unanswered} rest=${JSON.stringify(rest.codes)} statuses=${JSON.stringify(countBy(statuses.values()))}`,
  );
});
