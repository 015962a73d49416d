import { simpleParser } from 'mailparser';
import t from 'tap';
import { backendLabel } from '../../helpers/env.js';
import { emailDaemon } from './helpers.js';

const BROWSER = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15';

t.test(`email templates, sanitising, tracking, one-click unsubscribe, bulk (${backendLabel})`, async (t) => {
  const f = await emailDaemon();
  t.teardown(() => f.d.stop());
  const sim = f.svc.simulator!;
  await f.api('POST', '/v1/email/domains', { domain: 'shop.test' });
  const parsedMail = async (to: string) => {
    const until = Date.now() + 10_000;
    while (!sim.received(to).length) {
      if (Date.now() > until) throw new Error(`no mail to ${to}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return simpleParser(sim.received(to)[0].raw);
  };

  t.test('templates: strict variables, sanitised HTML, CSS inlined, text generated, preview', async (t) => {
    const created = await f.api('POST', '/v1/email/templates', {
      name: 'welcome',
      subject: 'Welcome {{user.name}}',
      html:
        '<style>p { color: red }</style><p onclick="steal()">Hi {{user.name}}</p><script>alert(1)</script>' +
        '<a href="javascript:alert(1)">bad</a><a href="https://shop.test/start">Start</a><img src="x" onerror="alert(2)">',
    });
    t.equal(created.status, 201, created.text);
    const id = created.json.data.id;
    const preview = await f.api('POST', `/v1/email/templates/${id}/preview`, { data: { user: { name: 'Ada <b>' } } });
    t.equal(preview.status, 200, preview.text);
    const p = preview.json.data;
    t.equal(p.subject, 'Welcome Ada <b>', 'the subject is not HTML-escaped');
    t.notMatch(p.html, /script|onclick|onerror|javascript:/i, 'no scripts, event attributes or javascript: links');
    t.match(p.html, /<p style="color: red;">Hi Ada &lt;b&gt;<\/p>/, 'CSS inlined, data escaped');
    t.match(p.html, /href="https:\/\/shop\.test\/start"/);
    t.match(p.text, /Hi Ada <b>/, 'a text part generated from the HTML');
    const missing = await f.api('POST', `/v1/email/templates/${id}/preview`, { data: {} });
    t.equal(missing.status, 422);
    t.equal(missing.json.code, 'TEMPLATE_RENDER_ERROR');
    t.match(missing.json.message, /^subject: "name" not defined in data/, 'names the part and the variable');
    const refused = await f.api('POST', '/v1/email/send', { from: 'news@shop.test', to: ['ada@dest.test'], templateId: id, data: { nobody: 1 } });
    t.equal(refused.json.code, 'TEMPLATE_RENDER_ERROR', 'a missing variable refuses the send');
    t.equal(sim.received('ada@dest.test').length, 0, 'nothing was sent');
    const updated = await f.api('PUT', `/v1/email/templates/${id}`, { subject: 'Hello {{user.name}}' });
    t.equal(updated.json.data.subject, 'Hello {{user.name}}');
    t.equal((await f.api('GET', '/v1/email/templates')).json.data.length, 1);
    const sent = await f.api('POST', '/v1/email/send', { from: 'news@shop.test', to: ['ada@dest.test'], templateId: id, data: { user: { name: 'Ada' } } });
    t.equal(sent.status, 200, sent.text);
    const mail = await parsedMail('ada@dest.test');
    t.equal(mail.subject, 'Hello Ada');
    t.notMatch(String(mail.html), /script/i);
    t.match(String(mail.text), /Hi Ada/);
    t.equal((await f.api('DELETE', `/v1/email/templates/${id}`)).status, 200);
    t.equal((await f.api('GET', `/v1/email/templates/${id}`)).json.code, 'TEMPLATE_NOT_FOUND');
  });

  t.test('tracking: open pixel and click redirect with signed tokens; forged and altered tokens are 404', async (t) => {
    const r = await f.api('POST', '/v1/email/send', {
      from: 'news@shop.test',
      to: ['track@dest.test'],
      subject: 'Tracked',
      html: '<html><body><p>See <a href="https://shop.test/sale?a=1&amp;b=2">the sale</a></p></body></html>',
      tracking: { opens: true, clicks: true },
    });
    const id = r.json.data.messages[0].messageId;
    await f.waitStatus(id, ['delivered']);
    const mail = await parsedMail('track@dest.test');
    const html = String(mail.html);
    const pixel = /src="([^"]+\/v1\/email\/t\/o\/[^"]+)"/.exec(html)![1];
    const click = /href="([^"]+\/v1\/email\/t\/c\/[^"]+)"/.exec(html)![1];
    t.ok(pixel.startsWith(f.d.api), 'links point at the public API address');

    // A proxy fetch is a machine open: history only.
    const proxy = await fetch(pixel, { headers: { 'user-agent': 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)' } });
    t.equal(proxy.status, 200);
    t.equal(proxy.headers.get('content-type'), 'image/gif');
    let m = (await f.api('GET', `/v1/email/messages/${id}`)).json.data;
    t.equal(m.status, 'delivered', 'a machine open moves nothing');
    t.ok(m.history.some((h: any) => h.kind === 'opened' && h.detail.machine === true), 'flagged as a machine open');

    const open = await fetch(pixel, { headers: { 'user-agent': BROWSER } });
    t.equal(open.status, 200);
    m = await f.waitStatus(id, ['opened']);
    const forged = pixel.replace(/\/o\/([^.]+)\.(.+)$/, (_s, body: string, mac: string) => `/o/${body}.${mac.slice(0, -2)}AA`);
    t.equal((await fetch(forged, { headers: { 'user-agent': BROWSER } })).status, 404, 'a forged MAC is 404');
    const otherBody = Buffer.from(JSON.stringify(['o', 'em_01aaaaaaaaaaaaaaaaaaaaaaaa', null])).toString('base64url');
    t.equal((await fetch(pixel.replace(/\/o\/[^.]+\./, `/o/${otherBody}.`))).status, 404, 'an altered message id is 404');
    t.equal((await fetch(click.replace('/t/c/', '/t/o/'))).status, 404, 'a click token is not an open token');

    const go = await fetch(click, { redirect: 'manual', headers: { 'user-agent': BROWSER } });
    t.equal(go.status, 302);
    t.equal(go.headers.get('location'), 'https://shop.test/sale?a=1&b=2');
    m = await f.waitStatus(id, ['clicked']);
    // Replayed: counted in the history again, the status stays.
    await fetch(pixel, { headers: { 'user-agent': BROWSER } });
    m = (await f.api('GET', `/v1/email/messages/${id}`)).json.data;
    t.equal(m.status, 'clicked', 'a replayed open after the click does not demote');
    t.equal(m.history.filter((h: any) => h.kind === 'opened').length, 3);
    t.ok(m.history.some((h: any) => h.kind === 'late' && h.status === 'opened'), 'the replay is a late update');
  });

  t.test('bulk: personalizations, List-Unsubscribe one-click', async (t) => {
    const r = await f.api('POST', '/v1/email/bulk', {
      from: 'news@shop.test',
      subject: 'Hi {{name}}',
      text: 'Deals for {{name}}',
      personalizations: [
        { to: ['p1@dest.test'], data: { name: 'One' } },
        { to: ['p2@dest.test'], data: { name: 'Two' } },
      ],
    });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.data.sends.length, 2);
    const [id1] = r.json.data.sends[0].messages.map((m: any) => m.messageId);
    const m1 = await parsedMail('p1@dest.test');
    t.equal(m1.subject, 'Hi One');
    t.equal((await parsedMail('p2@dest.test')).text?.trim(), 'Deals for Two');
    t.match(sim.received('p1@dest.test')[0].raw, /^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r$/m);
    const unsub = /<([^>]+)>/.exec(sim.received('p1@dest.test')[0].raw.replace(/\r\n[ \t]+/g, '').match(/^List-Unsubscribe:\s*(.+)$/m)![1])![1];
    const res = await fetch(unsub, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
    t.equal(res.status, 200, 'one POST, no session');
    await f.waitStatus(id1, ['unsubscribed']);
    const sup = (await f.api('GET', '/v1/email/suppressions?stream=bulk')).json.data;
    t.match(sup, [{ address: 'p1@dest.test', reason: 'unsubscribe', stream: 'bulk' }]);
    const again = await f.api('POST', '/v1/email/bulk', { from: 'news@shop.test', subject: 'x', text: 'y', personalizations: [{ to: ['p1@dest.test'] }] });
    t.equal(again.json.data.sends[0].messages[0].status, 'dropped');
    const tx = await f.api('POST', '/v1/email/send', { from: 'news@shop.test', to: ['p1@dest.test'], subject: 'Receipt', text: 'z' });
    t.equal(tx.json.data.messages[0].status, 'queued', 'transactional mail still goes');
    const bad = await f.api('POST', '/v1/email/bulk', { from: 'news@shop.test', subject: '{{name}}', text: 'y', personalizations: [{ to: ['p3@dest.test'], data: { name: 'a' } }, { to: ['p4@dest.test'] }] });
    t.equal(bad.json.code, 'TEMPLATE_RENDER_ERROR');
    t.match(bad.json.message, /personalizations\[1\]/);
  });
});
