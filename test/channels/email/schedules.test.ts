import t from 'tap';
import { backendLabel } from '../../helpers/env.js';
import { emailDaemon } from './helpers.js';

const DAY = 86_400_000;
const BROWSER = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15';

t.test(`re-engagement schedule runs with a fake clock (${backendLabel})`, async (t) => {
  const f = await emailDaemon();
  t.teardown(() => f.d.stop());
  const sim = f.svc.simulator!;
  await f.api('POST', '/v1/email/domains', { domain: 'reeng.test' });
  const tpl = await f.api('POST', '/v1/email/templates', { name: 'miss-you', subject: 'We miss you, {{email}}', html: '<p>Come back, {{email}}</p>' });
  const r = await f.api('POST', '/v1/email/send', {
    from: 'hi@reeng.test',
    to: ['a@dest.test', 'b@dest.test', 'c@dest.test', 'reject-d@dest.test'],
    subject: 'First',
    html: '<p>Hello</p>',
    tracking: { opens: true },
  });
  const [a, b, c, d] = r.json.data.messages.map((m: any) => m.messageId);
  for (const id of [a, b, c]) await f.waitStatus(id, ['delivered']);
  await f.waitStatus(d, ['bounced']);
  // b opens the mail (a person, not a proxy); its open is moved 5 days later, as if it happened then.
  const raw = sim.received('b@dest.test')[0].raw.replace(/=\r\n/g, '').replace(/=3D/g, '=');
  const pixel = /src="([^"]+\/t\/o\/[^"]+)"/.exec(raw)![1];
  t.equal((await fetch(pixel, { headers: { 'user-agent': BROWSER } })).status, 200);
  await f.waitStatus(b, ['opened']);
  await f.d.daemon.db.query(`UPDATE email_events SET at = at + $2 WHERE message_id = $1 AND kind = 'opened'`, [b, 5 * DAY]);

  const created = await f.api('POST', '/v1/email/schedules', {
    name: 'win-back',
    templateId: tpl.json.data.id,
    from: 'hi@reeng.test',
    inactiveDays: 7,
    capDays: 30,
    intervalMinutes: 1440,
    quietHours: { start: 22, end: 6 },
  });
  t.equal(created.status, 201, created.text);
  const id = created.json.data.id;
  t.equal((await f.api('POST', '/v1/email/schedules', { name: 'x', templateId: 'tpl_nope', from: 'hi@reeng.test', inactiveDays: 7 })).json.code, 'TEMPLATE_NOT_FOUND');

  const noon = Math.floor((Date.now() + 8 * DAY) / DAY) * DAY + 12 * 3_600_000;
  const [first] = await f.svc.schedules.runDue(noon);
  t.match(first, { audience: 3, sent: 2, capped: 0, suppressed: 1, skippedReason: null }, 'a and c: no open for 7 days; b opened; d bounced (suppressed)');
  const until = Date.now() + 10_000;
  while ((!sim.received('a@dest.test')[1] || !sim.received('c@dest.test')[1]) && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
  t.match(sim.received('a@dest.test')[1].raw, /We miss you, a@dest\.test/);
  t.match(sim.received('a@dest.test')[1].raw, /List-Unsubscribe-Post: List-Unsubscribe=One-Click/, 'sent on the bulk stream');
  t.equal(sim.received('b@dest.test').length, 1, 'b engaged: nothing more');
  t.equal(sim.received('reject-d@dest.test').length, 0);

  t.same(await f.svc.schedules.runDue(noon + 3_600_000), [], 'not due again within the interval');
  const [second] = await f.svc.schedules.runDue(noon + DAY);
  t.match(second, { sent: 0, capped: 2, suppressed: 1 }, 'the frequency cap holds a and c back');
  const [quiet] = await f.svc.schedules.runDue(noon + 2 * DAY + 11 * 3_600_000);
  t.match(quiet, { sent: 0, skippedReason: 'quiet_hours' }, '23:00 UTC is in the quiet hours');

  const view = (await f.api('GET', `/v1/email/schedules/${id}`)).json.data;
  t.equal(view.runs.length, 3, 'every run listed with its counts');
  t.same(view.runs.map((x: any) => x.sent), [0, 0, 2]);
  t.equal((await f.api('DELETE', `/v1/email/schedules/${id}`)).status, 200);
  t.equal((await f.api('GET', `/v1/email/schedules/${id}`)).json.code, 'SCHEDULE_NOT_FOUND');
});
