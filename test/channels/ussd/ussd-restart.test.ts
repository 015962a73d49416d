// Faults: a daemon stopped in the middle of sessions and started again on the same storage continues them (state,
// position and transcript are in SQL, not in the process); an app that cannot be reached ends the session with the
// apology. Also the embedded default's readiness note and the OpenAPI document of the USSD routes.
import t from 'tap';
import { call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { AfricasTalkingSimulator } from '../../../src/sim/ussd/africastalking-sim.js';
import { BANK_TREE, customer, publishedMenu } from './ussd-helpers.js';

t.test(`USSD across a restart; an unreachable app (${backendLabel})`, async (t) => {
  const first = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : first.stop()));
  const acme = await customer(first, 'acme');
  await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384*12#', menuId: await publishedMenu(acme.api, BANK_TREE) });
  // A port nothing listens on: the app is down.
  await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*386#', webhookUrl: 'http://127.0.0.1:9/ussd' });
  const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
  const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;

  const ready = (await call(first.admin, 'GET', '/readyz')).json;
  t.match(ready.warnings.join('\n'), /USSD: carrier sessions come only from the embedded SMSC simulator/, 'the embedded default says where sessions come from');
  const doc = (await call(first.api, 'GET', '/v1/openapi.json')).json;
  for (const p of ['/ussd/menus', '/ussd/menus/{id}/publish', '/ussd/service-codes', '/ussd/sessions/{id}', '/ussd/simulate', '/ussd/in/{connectorId}']) t.ok(doc.paths[p], `${p} in OpenAPI`);
  t.match(doc.tags.find((x: { name: string }) => x.name === 'ussd'), { 'x-maturity': 'beta' });

  const session = new AfricasTalkingSimulator({ callbackUrl: first.api + path }).session('233200000444', '*384*12#');
  t.equal((await session.hop()).text.split('\n')[0], 'Ferry Bank');
  t.equal((await session.hop('2')).text, 'Enter amount');

  const down = new AfricasTalkingSimulator({ callbackUrl: first.api + path }).session('233200000445', '*386#');
  const apology = await down.hop();
  t.same([apology.end, apology.text.startsWith('Sorry')], [true, true], 'an unreachable app: the apology at once');
  const failed = await acme.api('GET', '/v1/ussd/sessions?phone=233200000445');
  t.same([failed.json.data.sessions[0].endStatus, failed.json.data.sessions[0].error], ['Failed', 'APP_UNREACHABLE']);

  await first.stopKeepingStore();
  const second = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' }, first.reuse);
  stopped = true;
  t.teardown(() => second.stop());
  // The same session continues on the new process: the aggregator's next hop goes to the restarted daemon.
  const resumed = new AfricasTalkingSimulator({ callbackUrl: second.api + path }).session('233200000444', '*384*12#', session.sessionId, ['2']);
  const end = await resumed.hop('70');
  t.same(end, { end: true, text: 'You sent 70 GHS' });
  const s = await call(second.api, 'GET', `/v1/ussd/sessions?phone=233200000444`, { token: acme.token });
  t.same([s.json.data.sessions[0].hops, s.json.data.sessions[0].endStatus], [3, 'Success']);
});
