// Cloud metadata and link-local addresses are never a target of a customer's URL, even on the default setup of a
// developer's machine (where private targets are allowed): webhook endpoints, USSD app URLs, dynamic menu nodes and
// media links are refused with their validation error codes, over HTTP.
import t from 'tap';
import { accountWithKey, call, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';
import { messengerOf, newNumber } from '../channels/messenger/helpers.js';

const METADATA = ['http://169.254.169.254/latest/meta-data/', 'https://169.254.169.254/latest', 'http://169.254.10.1/', 'http://[fd00:ec2::254]/', 'http://[::ffff:169.254.169.254]/', 'http://[::ffff:a9fe:a9fe]/'];

t.test(`metadata targets refused on the default setup (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'acme');
  const api = (method: string, path: string, body: unknown) => call(d.api, method, path, { token, body });

  t.equal((await api('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).status, d.daemon.db.kind === 'postgres' ? 400 : 200, 'the default setup as it is (private targets on a developer machine)');
  let n = 0;
  for (const url of METADATA) {
    const wh = await api('POST', '/v1/webhooks', { url, events: ['*'] });
    t.equal(wh.status, 400, `webhook ${url}`);
    t.equal(wh.json.code, 'INVALID_WEBHOOK_URL');
    // Where private targets are not allowed (a database server), plain http is refused before the address is looked at.
    t.match(wh.json.message, d.daemon.db.kind === 'postgres' && url.startsWith('http:') ? /only https/ : /link-local/);

    const app = await api('POST', '/v1/ussd/service-codes', { serviceCode: `*70${++n}#`, webhookUrl: url });
    t.equal(app.status, 400, `USSD app ${url}`);
    t.equal(app.json.code, 'INVALID_APP_URL');

    const menu = await api('POST', '/v1/ussd/menus', { name: `m${n}`, tree: { start: 'd', nodes: { d: { type: 'dynamic', url } } } });
    t.equal(menu.json.code, 'INVALID_MENU_TREE', `dynamic node ${url}`);
    t.match(JSON.stringify(menu.json.data), /dynamic node URL/);
  }

  const to = newNumber();
  const sim = messengerOf(d).simulator!;
  await sim.userReply(to, 'hi');
  const sentBefore = sim.sent.length;
  for (const link of ['https://169.254.169.254/latest/photo.jpg', 'https://[fd00:ec2::254]/photo.jpg']) {
    const r = await api('POST', '/v1/messenger/send', { to, type: 'image', image: { link } });
    t.equal(r.status, 422, `media ${link}`);
    t.equal(r.json.code, 'WA004');
    t.match(r.json.message, /link-local/);
  }
  t.equal(sim.sent.length, sentBefore, 'nothing sent');
});
