// GET /admin/sim/messages and `ferry sim messages`: what the embedded simulator received, newest first, with
// concatenated parts joined, filtered by recipient; refused when no simulator runs.
import t from 'tap';
import { simMessages } from '../../src/sim/smpp/sim-admin-routes.js';
import type { ReceivedMessage } from '../../src/sim/smpp/simulator.js';
import { accountWithKey, call, ferryRun, startDaemon, gatewayOf, simulatorOf } from '../helpers/daemon.js';
import { startGatewayDaemon } from '../helpers/gateway.js';
import { startSimulator } from '../../src/sim/smpp/simulator.js';

// Each `ferry` call here is a process that loads the CLI through tsx (seconds each on a 2-core machine): the file's
// bound is set for that, above the suite's default.
t.setTimeout(420_000);

t.test('the embedded simulator shows what it received, through the admin API and the CLI', async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'sim-reader');
  const long = 'part '.repeat(60).trim(); // 299 characters: two GSM-7 parts
  for (const [to, message] of [
    ['233241234567', 'first'],
    ['233201234567', 'other phone'],
    ['233241234567', long],
  ]) {
    const r = await call(d.api, 'POST', '/v1/sms/send', { token, body: { to, from: 'Acme', message } });
    t.equal(r.status, 200);
  }
  const auth = { authorization: `Bearer ${d.adminToken}` };
  let shown: { messages: Array<{ text: string; parts: number; complete: boolean; from: string; to: string[] }> } = { messages: [] };
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    shown = (await call(d.admin, 'GET', '/admin/sim/messages?to=233241234567', { headers: auth })).json.data;
    if (shown.messages.length === 2 && shown.messages[0].complete) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.same(
    shown.messages.map((m) => [m.text, m.parts, m.complete, m.from, m.to]),
    [
      [long, 2, true, 'Acme', ['233241234567']],
      ['first', 1, true, 'Acme', ['233241234567']],
    ],
    'newest first, parts joined, only that recipient',
  );
  const limited = await call(d.admin, 'GET', '/admin/sim/messages?limit=1', { headers: auth });
  t.equal(limited.json.data.messages.length, 1);
  t.equal((await call(d.admin, 'GET', '/admin/sim/messages?limit=0', { headers: auth })).json.code, 'VALIDATION_ERROR');
  t.equal((await call(d.admin, 'GET', '/admin/sim/messages')).status, 401, 'behind the admin token');

  const env = { FERRY_ADMIN_URL: d.admin, FERRY_ADMIN_TOKEN: d.adminToken };
  const cli = await ferryRun(['sim', 'messages', '--to', '233201234567', '--json'], env);
  t.equal(cli.code, 0, cli.stderr);
  t.equal(JSON.parse(cli.stdout)[0].text, 'other phone');
  const human = await ferryRun(['sim', 'messages', '--to', '233201234567'], env);
  t.match(human.stdout, /Z {2}Acme -> 233201234567\n {2}other phone\n/);
  const none = await ferryRun(['sim', 'messages', '--to', '233209999999', '--wait', '1'], env);
  t.equal(none.code, 2, 'waiting for a message that never comes fails');
  t.match(none.stderr, /no message to 233209999999 reached the simulator within 1 s/);
});

t.test('no simulator: SIMULATOR_NOT_RUNNING', async (t) => {
  const carrier = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' } });
  t.teardown(() => carrier.close());
  const gw = await startGatewayDaemon({ upstreams: [{ id: 'carrier', port: carrier.port }] });
  t.teardown(() => gw.stop());
  const r = await call(gw.admin, 'GET', '/admin/sim/messages', { headers: { authorization: `Bearer ${gw.adminToken}` } });
  t.equal(r.status, 404);
  t.equal(r.json.code, 'SIMULATOR_NOT_RUNNING');
});

t.test('parts are joined per reference; a reused reference starts a new message; a missing part shows as incomplete', async (t) => {
  let at = 1_000;
  const part = (text: string, reference: number, seq: number, total = 2): ReceivedMessage => ({
    messageId: `m${at}`,
    systemId: 's',
    command: 'submit_sm',
    source: 'A',
    destinations: ['1'],
    dataCoding: 0,
    esmClass: 0x40,
    registeredDelivery: 1,
    text,
    concat: { reference, total, seq, via: 'udh' },
    receivedAt: at++,
    duplicateOf: 0,
  });
  const out = simMessages([part('a1', 7, 1), part('a2', 7, 2), part('b1', 7, 1), part('b2', 7, 2), part('c1', 8, 1)], undefined, 10);
  t.same(
    out.map((m) => [m.text, m.complete]),
    [
      ['c1', false],
      ['b1b2', true],
      ['a1a2', true],
    ],
  );
});

t.test('the embedded simulator is scriptable: outcomes by recipient, duplicate and reordered receipts, from the admin API and the CLI', async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '10' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'sim-script');
  const auth = { authorization: `Bearer ${d.adminToken}` };
  const patch = await call(d.admin, 'PATCH', '/admin/sim/behaviour', {
    headers: auth,
    body: { outcomeRules: [{ destination: '23320*', stat: 'UNDELIV' }], duplicateReceiptRatio: 1, receiptJitterMs: 200 },
  });
  t.equal(patch.status, 200, JSON.stringify(patch.json));
  t.same(patch.json.data.outcomeRules, [{ destination: '23320*', stat: 'UNDELIV' }]);
  const bad = await call(d.admin, 'PATCH', '/admin/sim/behaviour', { headers: auth, body: { outcomeRules: [{ destination: '233*', stat: 'LOST' }] } });
  t.equal(bad.json.code, 'VALIDATION_ERROR', 'an unknown stat word is refused');

  const send = async (to: string, i: number) => (await call(d.api, 'POST', '/v1/sms/send', { token, body: { to, from: 'Acme', message: `m${i}` } })).json.data.messageId as string;
  const toFail = await Promise.all(Array.from({ length: 5 }, (_, i) => send('233201234567', i)));
  const toPass = await Promise.all(Array.from({ length: 5 }, (_, i) => send('233241234567', i)));
  const final = async (id: string) => {
    const until = Date.now() + 15_000;
    for (;;) {
      const rec = await gatewayOf(d.daemon).ledger.get(id);
      if (rec && ['delivered', 'undelivered'].includes(rec.status)) return rec.status;
      if (Date.now() > until) throw new Error(`${id} not final`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  t.same(await Promise.all(toFail.map(final)), Array(5).fill('undelivered'), 'the rule decides for its prefix');
  t.same(await Promise.all(toPass.map(final)), Array(5).fill('delivered'), 'the others follow the weights');
  const sim = simulatorOf(d.daemon)!.simulator;
  const until = Date.now() + 10_000;
  while (sim.stats.receiptsDuplicated < 10 && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
  t.equal(sim.stats.receiptsDuplicated, 10, 'every receipt was sent twice');
  const history = await gatewayOf(d.daemon).ledger.history(toPass[0]);
  t.equal(history.filter((h) => h.status === 'delivered').length, 1, 'a duplicate receipt changes nothing');

  const env = { FERRY_ADMIN_URL: d.admin, FERRY_ADMIN_TOKEN: d.adminToken };
  const cli = await ferryRun(['sim', 'behaviour', '--outcome', '23324*=rejectd', '--outcome', '233200000000=EXPIRED', '--json'], env);
  t.equal(cli.code, 0, cli.stderr);
  t.same(JSON.parse(cli.stdout).outcomeRules, [
    { destination: '23324*', stat: 'REJECTD' },
    { destination: '233200000000', stat: 'EXPIRED' },
  ]);
  const wrong = await ferryRun(['sim', 'behaviour', '--outcome', '23324'], env);
  t.not(wrong.code, 0);
  t.match(wrong.stderr, /expected NUMBER=STAT/);
});
