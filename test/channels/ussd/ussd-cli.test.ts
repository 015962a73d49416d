// `ferry ussd dial` as a separate process: scripted inputs through the daemon's embedded SMSC simulator over SMPP,
// and as Africa's Talking against an aggregator connector (the AT simulator, with its end-of-session notice).
import { spawn } from 'node:child_process';
import t from 'tap';
import { AfricasTalkingSimulator } from '../../../src/sim/ussd/africastalking-sim.js';
import { packageRoot } from '../../../src/util/paths.js';
import { startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { childEnv } from '../../helpers/child-env.js';
import { cliEntry } from '../../helpers/fresh-build.js';
import { BANK_TREE, customer, newPhone, publishedMenu } from './ussd-helpers.js';

// Each `ferry` call here is a process that loads the CLI through tsx (seconds each on a 2-core machine): the file's
// bound is set for that, above the suite's default.
t.setTimeout(420_000);

function ferry(d: TestDaemon, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...cliEntry(), ...args], {
      cwd: packageRoot,
      env: childEnv({ FERRY_ADMIN_URL: d.admin, FERRY_ADMIN_TOKEN: d.adminToken, FERRY_DATA_DIR: d.reuse.store.dataDir }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test(`ferry ussd dial and the Africa's Talking simulator (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384*12#', menuId: await publishedMenu(acme.api, BANK_TREE) });

  t.test('over SMPP through the embedded simulator, scripted', async (t) => {
    const phone = newPhone();
    const r = await ferry(d, ['ussd', 'dial', '*384*12#', '--phone', phone, '--input', '2', '--input', '15', '--json']);
    t.equal(r.code, 0, r.stderr);
    const screens = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { text: string; end: boolean });
    t.same(screens.map((s) => [s.text.split('\n')[0], s.end]), [['Ferry Bank', false], ['Enter amount', false], ['You sent 15 GHS', true]]);
    const s = await acme.api('GET', `/v1/ussd/sessions?phone=${phone}`);
    t.same([s.json.data.sessions[0].channel, s.json.data.sessions[0].endStatus], ['smpp', 'Success']);
  });

  t.test('ferry sim ussd: the same handset under ferry sim', async (t) => {
    const r = await ferry(d, ['sim', 'ussd', '*384*12#', '--phone', newPhone(), '--input', '1', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.same(r.stdout.trim().split('\n').map((l) => JSON.parse(l).text.split('\n')[0]), ['Ferry Bank', 'Your balance is 120.50 GHS']);
  });

  t.test('inputs run out: the phone hangs up, the session ends Incomplete', async (t) => {
    const phone = newPhone();
    const r = await ferry(d, ['ussd', 'dial', '*384*12#', '--phone', phone, '--input', '2', '--json']);
    t.equal(r.code, 0, r.stderr);
    const s = await acme.api('GET', `/v1/ussd/sessions?phone=${phone}`);
    t.same([s.json.data.sessions[0].status, s.json.data.sessions[0].endStatus], ['ended', 'Incomplete']);
  });

  t.test("as Africa's Talking against a connector", async (t) => {
    const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const key = `?key=${encodeURIComponent(c.json.data.secret)}`;
    const callbackUrl = `${d.api}${c.json.data.callbackPath}${key}`;
    const eventsUrl = `${d.api}${c.json.data.callbackPath}/events${key}`;
    const r = await ferry(d, ['ussd', 'dial', '*384*12#', '--phone', '254711000333', '--callback', callbackUrl, '--input', '1', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.same(r.stdout.trim().split('\n').map((l) => JSON.parse(l).end), [false, true]);

    const at = new AfricasTalkingSimulator({ callbackUrl, eventsUrl });
    const session = at.session('254711000444', '*384*12#');
    t.equal((await session.hop()).text.split('\n')[0], 'Ferry Bank');
    t.equal((await session.hop('2')).text, 'Enter amount');
    await session.abandon();
    const s = await acme.api('GET', '/v1/ussd/sessions?phone=254711000444');
    t.same([s.json.data.sessions[0].endStatus, s.json.data.sessions[0].lastInput], ['Incomplete', '2']);
  });
});
