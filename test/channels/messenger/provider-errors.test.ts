import t from 'tap';
import { startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { api, customer, messengerOf, newNumber, statusUntil } from './helpers.js';

// Many sends through a whole daemon and its simulator: bounded above the suite's default on a loaded 2-core machine.
t.setTimeout(300_000);

const HOUR = 3_600_000;

t.test(`the platform's errors and the 24-hour window (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '10' });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const a = api(d, acme.token);
  const { simulator: sim, messenger } = messengerOf(d);
  const template = (to: string) => a.send({ to, type: 'template', template: { name: 'hello_world', language: 'en_US' } });
  const final = (id: string) => statusUntil(d, acme.token, id, (x) => x.status === 'read' || x.status === 'failed', 15_000);

  t.test('131026 from the platform: failed, WA002 beside 131026', async (t) => {
    const to = newNumber();
    sim!.offPlatform.add(to);
    const r = await template(to);
    t.equal(r.status, 200, 'accepted: Ferry did not know yet');
    const s = await final(r.json.data.messageId);
    t.match(s, { status: 'failed', error: { code: 'WA002', providerCode: '131026' } });
    const again = await template(to);
    t.equal(again.json.code, 'WA002', 'then refused at once');
  });

  t.test('a late 131047 ends as WA003 and closes the window Ferry kept', async (t) => {
    const to = newNumber();
    await sim!.userReply(to, 'hi');
    sim!.inject(to, 131047);
    const r = await a.send({ to, type: 'text', text: { body: 'in the window, says Ferry' } });
    t.equal(r.status, 200);
    t.match(await final(r.json.data.messageId), { status: 'failed', error: { code: 'WA003', providerCode: '131047' } });
    const next = await a.send({ to, type: 'text', text: { body: 'again' } });
    t.equal(next.json.code, 'WA003', 'the window is closed now');
  });

  t.test('131053 once: retried, then sent; twice: WA004', async (t) => {
    const to = newNumber();
    sim!.inject(to, 131053, 1);
    const once = await template(to);
    const s1 = await final(once.json.data.messageId);
    t.equal(s1.status, 'read');
    t.ok(s1.history.some((h: any) => h.kind === 'attempt' && h.detail?.providerError === '131053'), 'the failed attempt is in the history');
    sim!.inject(to, 131053, 2);
    const twice = await template(to);
    t.match(await final(twice.json.data.messageId), { status: 'failed', error: { code: 'WA004', providerCode: '131053' } });
  });

  t.test('130429: backed off (WA005 in the history), then sent', async (t) => {
    const to = newNumber();
    sim!.inject(to, 130429, 1);
    const r = await template(to);
    const s = await final(r.json.data.messageId);
    t.equal(s.status, 'read');
    t.ok(s.history.some((h: any) => h.kind === 'attempt' && h.detail?.error === 'WA005' && h.detail?.providerError === '130429'), JSON.stringify(s.history));
  });

  t.test('resend: only failed messages; the new one has its own id', async (t) => {
    const to = newNumber();
    sim!.inject(to, 131026, 1);
    const r = await template(to);
    await final(r.json.data.messageId);
    await d.daemon.db.query(`DELETE FROM messenger_contacts WHERE phone = $1`, [to]); // the number joined since
    const again = await a.call('POST', '/v1/messenger/resend', { messageId: r.json.data.messageId });
    t.equal(again.status, 200, again.text);
    t.not(again.json.data.messageId, r.json.data.messageId);
    t.equal(again.json.data.resentFrom, r.json.data.messageId);
    const s = await final(again.json.data.messageId);
    t.equal(s.status, 'read');
    const no = await a.call('POST', '/v1/messenger/resend', { messageId: again.json.data.messageId });
    t.equal(no.json.code, 'NOT_RESENDABLE');
    t.equal((await a.call('POST', '/v1/messenger/resend', { messageId: 'wam_nope' })).json.code, 'MESSAGE_NOT_FOUND');
  });

  t.test('the window opened by a simulated reply closes after 24 hours (injected clock)', async (t) => {
    const to = newNumber();
    await sim!.userReply(to, 'hello');
    const real = messenger.clock;
    t.teardown(() => {
      messenger.clock = real;
    });
    messenger.clock = () => Date.now() + 24 * HOUR - 60_000;
    t.equal((await a.send({ to, type: 'text', text: { body: 'a minute before it closes' } })).status, 200);
    messenger.clock = () => Date.now() + 24 * HOUR + 1000;
    const late = await a.send({ to, type: 'text', text: { body: 'after' } });
    t.equal(late.json.code, 'WA003');
    t.equal((await template(to)).status, 200, 'a template still goes');
  });
});
