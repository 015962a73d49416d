import t from 'tap';
import { startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { api, customer, messengerOf, newNumber, statusUntil } from './helpers.js';

// Many sends through a whole daemon and its simulator: bounded above the suite's default on a loaded 2-core machine.
t.setTimeout(300_000);

t.test(`messenger send over HTTP against the embedded simulator (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '10' });
  t.teardown(() => d.stop());
  const { simulator: sim } = messengerOf(d);
  t.ok(sim, 'the embedded simulator runs by default');
  const acme = await customer(d, 'acme');
  const a = api(d, acme.token);

  const readyz = (await (await fetch(`${d.admin}/readyz`)).json()) as { warnings: string[] };
  t.ok(readyz.warnings.some((w: string) => w.startsWith('messenger: the embedded')), 'a readiness note names the simulator');

  t.test('text inside the window: accepted, then sent → delivered → read with history and a wamid', async (t) => {
    const to = newNumber();
    await sim!.userReply(to, 'hello');
    const r = await a.send({ to: `+${to}`, type: 'text', text: { body: 'Hi there', previewUrl: false }, reference: 'order-1' });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.code, 'MESSAGE_ACCEPTED');
    t.match(r.json.data, { messageId: /^wam_/, status: 'accepted' });
    const s = await statusUntil(d, acme.token, r.json.data.messageId, (x) => x.status === 'read');
    t.match(s.wamid, /^wamid\./);
    t.equal(s.reference, 'order-1');
    t.same(s.history.filter((h: any) => h.kind === 'state').map((h: any) => h.status), ['queued', 'sent', 'delivered', 'read']);
    const byWamid = await a.status(s.wamid);
    t.equal(byWamid.json.data.messageId, r.json.data.messageId, 'the status by wamid');
    const sent = sim!.sent.find((m) => m.wamid === s.wamid)!;
    t.same(sent.body.text, { body: 'Hi there', previewUrl: false }, 'the Cloud API object reached the platform as given');
  });

  t.test('outside the window a non-template send is WA003 at once; the provider is not called', async (t) => {
    const before = sim!.sent.length;
    const r = await a.send({ to: newNumber(), type: 'text', text: { body: 'no window' } });
    t.equal(r.status, 422);
    t.equal(r.json.code, 'WA003');
    t.equal(sim!.sent.length, before);
  });

  t.test('a template needs no window (hello_world en_US is approved from the start)', async (t) => {
    const r = await a.send({ to: newNumber(), type: 'template', template: { name: 'hello_world', language: { code: 'en_US' } } });
    t.equal(r.status, 200, r.text);
    await statusUntil(d, acme.token, r.json.data.messageId, (x) => x.status === 'read');
  });

  t.test('interactive button, list and CTA URL messages', async (t) => {
    const to = newNumber();
    await sim!.userReply(to, 'menu');
    const body = { text: 'Pick one' };
    const ok = [
      { type: 'button', body, action: { buttons: [1, 2, 3].map((i) => ({ type: 'reply', reply: { id: `b${i}`, title: `Option ${i}` } })) } },
      { type: 'list', body, action: { button: 'Choose', sections: [{ title: 'S', rows: Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` })) }] } },
      { type: 'cta_url', body, action: { name: 'cta_url', parameters: { display_text: 'Open', url: 'https://example.com/x?y=1' } } },
    ];
    for (const interactive of ok) {
      const r = await a.send({ to, type: 'interactive', interactive });
      t.equal(r.status, 200, `${interactive.type}: ${r.text}`);
    }
    const bad: Array<[unknown, string]> = [
      [{ type: 'button', body, action: { buttons: [1, 2, 3, 4].map((i) => ({ type: 'reply', reply: { id: `b${i}`, title: 'x' } })) } }, 'interactive.action.buttons'],
      [{ type: 'list', body, action: { button: 'Choose', sections: [{ rows: Array.from({ length: 11 }, (_, i) => ({ id: `r${i}`, title: 'x' })) }] } }, 'interactive.action.sections'],
      [{ type: 'cta_url', body, action: { name: 'cta_url', parameters: { display_text: 'Open', url: 'javascript:alert(1)' } } }, 'interactive.action.parameters.url'],
      [{ type: 'carousel', body, action: {} }, 'interactive.type'],
    ];
    for (const [interactive, field] of bad) {
      const r = await a.send({ to, type: 'interactive', interactive });
      t.equal(r.status, 400, r.text);
      t.equal(r.json.code, 'VALIDATION_ERROR');
      t.ok(r.json.data.errors.some((e: any) => e.field === field), `names ${field}: ${r.text}`);
    }
  });

  t.test('invalid input: WA001 for a bad number, VALIDATION_ERROR for bodies out of their limits', async (t) => {
    for (const to of ['12345', '0044123456789', 'abc', '+1234567890123456']) {
      const r = await a.send({ to, type: 'text', text: { body: 'x' } });
      t.equal(r.json.code, 'WA001', to);
      t.equal(r.status, 400);
    }
    const to = newNumber();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'text', text: { body: 'x'.repeat(4097) } }, 'text.body'],
      [{ type: 'text' }, 'text'],
      [{ type: 'document', document: { link: 'https://example.com/a.pdf' } }, 'document.filename'],
      [{ type: 'template', template: { name: 'Bad Name', language: 'en_US' } }, 'template.name'],
      [{ type: 'text', text: { body: 'x' }, image: { link: 'https://example.com/a.png' } }, 'image'],
    ];
    for (const [body, field] of cases) {
      const r = await a.send({ to, ...body });
      t.equal(r.status, 400, r.text);
      t.ok(r.json.data.errors.some((e: any) => e.field === field), `names ${field}: ${r.text}`);
    }
    const text4096 = await a.send({ to, type: 'template', template: { name: 'hello_world', language: 'en_US' } });
    t.equal(text4096.status, 200);
  });

  t.test('Idempotency-Key: the same send once', async (t) => {
    const to = newNumber();
    await sim!.userReply(to, 'hi');
    const body = { to, type: 'text', text: { body: 'once' } };
    const r1 = await a.send(body, { 'idempotency-key': 'k-1' });
    const r2 = await a.send(body, { 'idempotency-key': 'k-1' });
    t.equal(r2.json.data.messageId, r1.json.data.messageId);
    t.equal(r2.headers.get('idempotent-replayed'), 'true');
  });
});
