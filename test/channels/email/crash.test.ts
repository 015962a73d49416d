import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import { backendLabel, DATABASE_URL } from '../../helpers/env.js';
import { emailDaemon } from './helpers.js';

/** A loopback port nothing listens on (a relay that is down). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

t.test(`a crash between accept and send loses nothing (${backendLabel})`, async (t) => {
  // Instance A accepts while its relay is down, then dies without recording anything more.
  const a = await emailDaemon({ FERRY_EMAIL_SMTP_URL: `smtp://127.0.0.1:${await deadPort()}`, FERRY_EMAIL_REQUIRE_VERIFIED_DOMAIN: 'false' });
  await a.api('POST', '/v1/email/domains', { domain: 'crash.test' });
  const to = Array.from({ length: 30 }, (_, i) => `user${i}@dest.test`);
  const r = await a.api('POST', '/v1/email/send', { from: 'a@crash.test', to, subject: 'Kept', text: 'Across a crash' });
  t.equal(r.status, 200, r.text);
  const ids: string[] = r.json.data.messages.map((m: any) => m.messageId);
  await a.d.daemon.outbound!.abandon(); // the crash: nothing more is recorded or acknowledged
  await a.d.stopKeepingStore();

  // Instance B on the same storage, with the simulator as its relay: every accepted message is delivered once.
  const b = await emailDaemon({ FERRY_EMAIL_SMTP_URL: '' }, a.d.reuse);
  b.token = a.token;
  t.teardown(() => b.d.stop());
  // The jobs A had claimed (a send under way at the crash) are claimable again once their claim runs out: the send
  // timeout plus a minute, two minutes for email. The test moves those claims to their end rather than waiting.
  const now = Date.now();
  const ranOut = await b.d.daemon.db.query(`UPDATE outbound_jobs SET claimed_until = $2 WHERE message_id = ANY($1::text[]) AND claimed_until > $2`, [ids, now - 1]);
  t.comment(`${ranOut.rowCount} of ${ids.length} jobs were claimed by the crashed instance`);
  for (const id of ids) await b.waitStatus(id, ['delivered'], 30_000);
  const sim = b.svc.simulator!;
  for (const rcpt of to) t.equal(sim.received(rcpt).length, 1, `${rcpt} once`);
  const m = (await b.api('GET', `/v1/email/messages/${ids[0]}`)).json.data;
  t.ok(m.history.some((h: any) => h.kind === 'attempt' && /RELAY_UNREACHABLE|PROVIDER/.test(h.detail.error)) || m.attempts >= 1, 'the failed attempts against the dead relay are in the history');
});

t.test(`two instances share Postgres and Redis (${backendLabel})`, { skip: DATABASE_URL ? false : 'PGlite is one process: two instances need Postgres' }, async (t) => {
  const a = await emailDaemon();
  const b = await emailDaemon({}, a.d.reuse);
  b.token = a.token;
  t.teardown(async () => {
    await b.d.stopKeepingStore();
    await a.d.stop();
  });
  await a.api('POST', '/v1/email/domains', { domain: 'two.test' });
  const r = await b.api('POST', '/v1/email/send', { from: 'x@two.test', to: ['reject-two@dest.test', 'bounce-two@dest.test'], subject: 's', text: 't' });
  t.equal(r.status, 200, r.text);
  const [rejected, bounced] = r.json.data.messages.map((m: any) => m.messageId);
  await a.waitStatus(rejected, ['bounced']);
  await a.waitStatus(bounced, ['bounced']);
  // The suppression written by one instance drops the next send on the other.
  const again = await a.api('POST', '/v1/email/send', { from: 'x@two.test', to: ['reject-two@dest.test'], subject: 's', text: 't' });
  t.equal(again.json.data.messages[0].status, 'dropped');
  const sup = await b.api('GET', '/v1/email/suppressions?stream=transactional');
  t.equal(sup.json.data.length, 2, 'both suppressions are seen by the other instance');
});
