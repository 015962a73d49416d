// Webhook apps on loopback: an app written with ussd-menu-builder (unchanged, as for Africa's Talking) answering
// CON/END over SMPP and AT callbacks; signed requests; a JSON-dialect app; a dynamic node of a hosted tree; and apps
// that time out, fail or answer malformed text: the session ends with the apology, never a hang.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import UssdMenu from 'ussd-menu-builder';
import { UssdServiceOp } from '../../../src/smpp/constants.js';
import { startDaemon, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { atHop, customer, newPhone, publishedMenu, ussdTo } from './ussd-helpers.js';

interface Hit {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** The quick example of ussd-menu-builder's README, as an Africa's Talking app would run it. */
function bankMenu(): UssdMenu {
  const menu = new UssdMenu();
  menu.startState({
    run: () => menu.con('Welcome. Choose option:\n1. Show Balance\n2. Buy Airtime'),
    next: { '1': 'showBalance', '2': 'buyAirtime' },
  });
  menu.state('showBalance', { run: () => menu.end(`Your balance is KES 100, ${menu.args.phoneNumber}`) });
  menu.state('buyAirtime', { run: () => menu.con('Enter amount:'), next: { '*\\d+': 'buyAirtime.amount' } });
  menu.state('buyAirtime.amount', { run: () => menu.end(`Airtime of ${menu.val} bought`) });
  return menu;
}

async function appServer(): Promise<{ server: Server; base: string; hits: Hit[] }> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const path = req.url ?? '';
      hits.push({ path, headers: req.headers, body });
      const form = Object.fromEntries(new URLSearchParams(body));
      switch (path) {
        case '/menu':
          void bankMenu()
            .run(form as unknown as Parameters<UssdMenu["run"]>[0], () => undefined)
            .then((text: string) => res.writeHead(200, { 'content-type': 'text/plain' }).end(text));
          return;
        case '/slow':
          return void setTimeout(() => res.writeHead(200).end('END too late'), 6000).unref();
        case '/bad':
          return void res.writeHead(200).end('Hello there');
        case '/fail':
          return void res.writeHead(500).end('CON oops');
        case '/json': {
          const j = JSON.parse(body) as { inputs: string[] };
          return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(j.inputs.length ? { end: true, text: `Got ${j.inputs.join(',')}` } : { end: false, text: 'Say something' }));
        }
        case '/dyn':
          return void res.writeHead(200).end(`CON Hello ${form.phoneNumber}, enter PIN`);
        default:
          return void res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

t.test(`USSD webhook apps (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_USSD_APP_TIMEOUT_MS: '1500' });
  t.teardown(() => d.stop());
  const app = await appServer();
  t.teardown(() => new Promise<void>((r) => { app.server.close(() => r()); app.server.closeAllConnections(); }));
  const acme = await customer(d, 'acme');
  const claim = async (serviceCode: string, path: string, dialect = 'africastalking') => {
    const r = await acme.api('POST', '/v1/ussd/service-codes', { serviceCode, webhookUrl: app.base + path, dialect });
    if (r.status !== 200) throw new Error(r.json?.code);
    return r.json.data as { signingSecret: string };
  };
  const sim = simulatorOf(d.daemon)!.simulator;

  t.test('an ussd-menu-builder app over SMPP, unchanged; requests signed like webhooks', async (t) => {
    const { signingSecret } = await claim('*710#', '/menu');
    const phone = newPhone();
    const info = Buffer.from([3, 0]);
    await sim.injectUssd({ source: phone, destination: '*710#', text: '*710#', op: UssdServiceOp.PSSR_INDICATION, sessionInfo: info });
    t.equal((await ussdTo(d, phone))[0].text, 'Welcome. Choose option:\n1. Show Balance\n2. Buy Airtime');
    await sim.injectUssd({ source: phone, destination: '*710#', text: '2', op: UssdServiceOp.USSR_CONFIRM, sessionInfo: info });
    t.equal((await ussdTo(d, phone, 2))[1].text, 'Enter amount:');
    await sim.injectUssd({ source: phone, destination: '*710#', text: '50', op: UssdServiceOp.USSR_CONFIRM, sessionInfo: info });
    const end = (await ussdTo(d, phone, 3))[2];
    t.same([end.text, end.tlvs?.ussd_service_op], ['Airtime of 50 bought', UssdServiceOp.PSSR_RESPONSE]);

    const hops = app.hits.filter((h) => h.path === '/menu');
    t.same(hops.map((h) => Object.fromEntries(new URLSearchParams(h.body)).text), ['', '2', '2*50'], 'text: every input joined by *');
    const first = Object.fromEntries(new URLSearchParams(hops[0].body));
    t.match(first, { sessionId: /^ussd_/, serviceCode: '*710#', phoneNumber: phone, networkCode: '' });
    const h = hops[0].headers;
    const key = Buffer.from(signingSecret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key).update(`${h['webhook-id']}.${h['webhook-timestamp']}.${hops[0].body}`).digest('base64');
    t.equal(h['webhook-signature'], `v1,${expected}`, 'verifiable with the signing secret');
  });

  t.test("the same app through Africa's Talking callbacks", async (t) => {
    const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
    const base = { sessionId: 'at-app-1', serviceCode: '*710#', phoneNumber: '254711000222', networkCode: '63902' };
    t.equal((await atHop(d, path, { ...base, text: '' })).text, 'CON Welcome. Choose option:\n1. Show Balance\n2. Buy Airtime');
    t.equal((await atHop(d, path, { ...base, text: '1' })).text, 'END Your balance is KES 100, 254711000222');
  });

  t.test('slow, failing and malformed apps: the apology, the session Failed with the cause', async (t) => {
    await claim('*711#', '/slow');
    await claim('*712#', '/bad');
    await claim('*713#', '/fail');
    for (const [code, error] of [['*711#', 'APP_TIMEOUT'], ['*712#', 'APP_MALFORMED'], ['*713#', 'APP_HTTP_STATUS']]) {
      const r = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: code, phoneNumber: '233241112299' });
      t.same(r.json.data.screens, [{ input: null, text: 'Sorry, this service is not available right now. Please try again later.', end: true }], code);
      const s = await acme.api('GET', `/v1/ussd/sessions/${r.json.data.sessionId}`);
      t.same([s.json.data.endStatus, s.json.data.error], ['Failed', error], `${code}: ${error}`);
    }
    // Over SMPP too: the phone gets the apology as a release, not silence.
    const phone = newPhone();
    await sim.injectUssd({ source: phone, destination: '*711#', text: '*711#', op: UssdServiceOp.PSSR_INDICATION, sessionInfo: Buffer.from([1, 0]) });
    const [apology] = await ussdTo(d, phone);
    t.same([apology.text.startsWith('Sorry'), apology.tlvs?.ussd_service_op], [true, UssdServiceOp.PSSR_RESPONSE]);
  });

  t.test('a JSON-dialect app', async (t) => {
    await claim('*714#', '/json', 'json');
    const r = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: '*714#', phoneNumber: '233241112298', inputs: ['hi'] });
    t.same(r.json.data.screens.map((s: { text: string }) => s.text), ['Say something', 'Got hi']);
    const hit = app.hits.filter((h) => h.path === '/json').pop()!;
    t.match(hit.headers['content-type'], /application\/json/);
    t.match(JSON.parse(hit.body), { serviceCode: '*714#', phoneNumber: '233241112298', text: 'hi', inputs: ['hi'], input: 'hi' });
  });

  t.test("a hosted tree's dynamic node asks the app for its screen", async (t) => {
    const id = await publishedMenu(acme.api, {
      start: 'm',
      nodes: {
        m: { type: 'menu', text: 'Shop', options: [{ key: '1', label: 'Pay', next: 'pin' }] },
        pin: { type: 'dynamic', url: `${app.base}/dyn`, var: 'pin', next: 'done' },
        done: { type: 'end', text: 'Paid with PIN {pin}' },
      },
    });
    await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*715#', menuId: id });
    const r = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: '*715#', phoneNumber: '233241112297', inputs: ['1', '4321'] });
    t.same(r.json.data.screens.map((s: { text: string }) => s.text), ['Shop\n1. Pay', 'Hello 233241112297, enter PIN', 'Paid with PIN 4321']);
    const refused = await acme.api('POST', '/v1/ussd/menus', { name: 'x', tree: { start: 'd', nodes: { d: { type: 'dynamic', url: 'ftp://nope' } } } });
    t.equal(refused.json.code, 'INVALID_MENU_TREE', 'dynamic URLs pass the SSRF guard on upload');
  });
});
