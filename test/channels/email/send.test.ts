import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import nodemailer from 'nodemailer';
import t from 'tap';
import { buildDsn } from '../../../src/sim/mail/report-mail.js';
import { call } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { emailDaemon } from './helpers.js';

t.test(`email over real SMTP to the simulator (${backendLabel})`, async (t) => {
  const f = await emailDaemon();
  t.teardown(() => f.d.stop());
  const sim = f.svc.simulator!;
  t.ok(sim, 'no relay configured: the embedded mail simulator is the relay');
  const ready = await call(f.d.admin, 'GET', '/readyz');
  t.match(ready.json.warnings.join('\n'), /NO SMTP RELAY CONFIGURED/, 'said on /readyz');
  t.match(ready.json.warnings.join('\n'), /NO PUBLIC BASE URL: bulk mail's List-Unsubscribe link/, 'no public base URL: the http:// unsubscribe link is said on /readyz');

  const dom = await f.api('POST', '/v1/email/domains', { domain: 'Example.test' });
  t.equal(dom.status, 201, dom.text);
  const domain = dom.json.data;
  t.equal(domain.domain, 'example.test');
  t.equal(domain.verified, false);
  const dkimRecord = domain.records.find((r: any) => r.purpose === 'dkim');
  t.equal(dkimRecord.name, 'ferry._domainkey.example.test');
  t.match(dkimRecord.value, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
  t.notMatch(JSON.stringify(dom.json), /PRIVATE KEY/, 'the private key is never returned');
  const stored = await f.d.daemon.db.query<{ private_key_cipher: string }>(`SELECT private_key_cipher FROM email_domains WHERE id = $1`, [domain.id]);
  t.notMatch(stored.rows[0].private_key_cipher, /PRIVATE KEY/, 'the private key is encrypted at rest');
  t.equal((await f.api('POST', '/v1/email/domains', { domain: 'example.test' })).status, 200, 'adding it again answers the same domain');

  const send = (body: Record<string, unknown>, headers?: Record<string, string>) =>
    f.api('POST', '/v1/email/send', { from: 'hello@example.test', subject: 'Hi', text: 'Hello there', ...body }, headers);

  t.test('a send arrives signed with DKIM that a verifier passes; verification by DNS', async (t) => {
    const r = await send({ to: ['alice@dest.test'], cc: ['carol@dest.test'], bcc: ['bob@dest.test'], html: '<p>Hello <b>Alice</b></p>', tags: ['welcome'] });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.code, 'EMAIL_QUEUED');
    t.same(r.json.data.messages.map((m: any) => [m.to, m.status]), [['alice@dest.test', 'queued'], ['carol@dest.test', 'queued'], ['bob@dest.test', 'queued']]);
    const ids = r.json.data.messages.map((m: any) => m.messageId);
    for (const id of ids) t.match(id, /^em_[0-9a-z]{26}$/);
    const m = await f.waitStatus(ids[0], ['delivered']);
    t.equal(m.to, 'alice@dest.test');
    t.same(m.tags, ['welcome']);
    t.same(m.history.map((h: any) => h.status), ['queued', 'delivered']);
    await f.waitStatus(ids[2], ['delivered']);
    const mail = sim.received('alice@dest.test')[0];
    t.match(mail.mailFrom, new RegExp(`^b\\+${ids[0]}-[0-9a-f]{12}@bounces\\.ferry\\.localhost$`), 'VERP return path names the message, signed');
    t.match(mail.raw, /^DKIM-Signature: .*d=example\.test/m);
    t.notMatch(mail.raw, /bob@dest\.test/, 'bcc is not in the headers');
    t.match(mail.raw, /^Cc: carol@dest\.test/m);
    const bobMail = sim.received('bob@dest.test')[0];
    t.equal(bobMail.rcptTo.length, 1, 'one envelope recipient per message');

    const publish = () => {
      f.dns.set('ferry._domainkey.example.test', [dkimRecord.value]);
      f.dns.set('example.test', [domain.records.find((x: any) => x.purpose === 'spf').value]);
    };
    publish();
    const res = await dkimVerify(mail.raw, { resolver: async (name: string) => (f.dns.get(name) ?? []).map((s) => [s]) } as any);
    t.equal(res.results[0].status.result, 'pass', 'mailauth verifies the DKIM signature');
    t.equal(res.results[0].signingDomain, 'example.test');
    const tampered = mail.raw.replace('Hello there', 'Hello thera');
    const bad = await dkimVerify(tampered, { resolver: async (name: string) => (f.dns.get(name) ?? []).map((s) => [s]) } as any);
    t.not(bad.results[0].status.result, 'pass', 'an altered body does not pass');
    t.match(bad.results[0].status.comment, /body hash/, 'its body hash does not verify');

    const checked = await f.api('GET', `/v1/email/domains/${domain.id}`);
    t.equal(checked.json.data.verified, true, 'the DKIM record is found in DNS');
    t.same(checked.json.data.records.map((x: any) => [x.purpose, x.published]), [['dkim', true], ['spf', true], ['return_path', false]]);
  });

  t.test('550 at RCPT: bounced and suppressed, then dropped without a send', async (t) => {
    const r = await send({ to: ['reject-me@dest.test'] });
    const id = r.json.data.messages[0].messageId;
    const m = await f.waitStatus(id, ['bounced']);
    t.equal(m.error, 'MAILBOX_UNAVAILABLE');
    t.equal(m.providerError, '550');
    const state = m.history.find((h: any) => h.status === 'bounced');
    t.match(state.detail.message, /550 5\.1\.1/, "the server's reply is in the history");
    const sup = await f.api('GET', '/v1/email/suppressions?stream=transactional');
    t.match(sup.json.data, [{ address: 'reject-me@dest.test', reason: 'hard_bounce', origin: 'smtp', messageId: id }]);
    const before = sim.received().length;
    const again = await send({ to: ['reject-me@dest.test', 'ok@dest.test'] });
    t.same(again.json.data.messages.map((x: any) => x.status), ['dropped', 'queued']);
    const dropped = await f.waitStatus(again.json.data.messages[0].messageId, ['dropped']);
    t.equal(dropped.history[0].kind, 'dropped');
    await f.waitStatus(again.json.data.messages[1].messageId, ['delivered']);
    t.equal(sim.received().length, before + 1, 'only the other recipient was sent');
    t.equal(sim.received('reject-me@dest.test').length, 0);

    // Manual suppression management.
    t.equal((await f.api('DELETE', '/v1/email/suppressions/reject-me@dest.test')).status, 200);
    t.equal((await f.api('DELETE', '/v1/email/suppressions/reject-me@dest.test')).json.code, 'SUPPRESSION_NOT_FOUND');
    t.equal((await f.api('POST', '/v1/email/suppressions', { address: 'Manual@dest.test', stream: 'bulk' })).status, 200);
    const m2 = await send({ to: ['manual@dest.test'], stream: 'bulk' });
    t.equal(m2.json.data.messages[0].status, 'dropped');
    const m3 = await send({ to: ['manual@dest.test'] });
    t.equal(m3.json.data.messages[0].status, 'queued', 'suppression is per stream');
  });

  t.test('451 greylisting: deferred, then delivered on retry', async (t) => {
    const r = await send({ to: ['greylist-me@dest.test'] });
    const id = r.json.data.messages[0].messageId;
    const m = await f.waitStatus(id, ['delivered'], 20_000);
    const attempt = m.history.find((h: any) => h.kind === 'attempt');
    t.equal(attempt.detail.providerError, '451');
    t.match(attempt.detail.message, /Greylisted/);
    t.ok(m.history.some((h: any) => h.kind === 'deferred'), 'deferred is in the history');
    t.equal(m.attempts, 2);
  });

  t.test('an asynchronous DSN and an ARF complaint are matched to their messages', async (t) => {
    const r = await send({ to: ['bounce-later@dest.test', 'complain-now@dest.test'] });
    const [bounce, complain] = r.json.data.messages.map((x: any) => x.messageId);
    const b = await f.waitStatus(bounce, ['bounced']);
    t.ok(b.history.some((h: any) => h.kind === 'dsn_failed' && h.detail.status === '5.1.1'), 'the DSN as read');
    t.equal(b.history.filter((h: any) => h.kind === 'state').map((h: any) => h.status).join(','), 'queued,delivered,bounced');
    const c = await f.waitStatus(complain, ['complained']);
    t.ok(c.history.some((h: any) => h.kind === 'complaint' && h.detail.feedbackType === 'abuse'));
    const sup = (await f.api('GET', '/v1/email/suppressions')).json.data;
    t.ok(sup.some((s: any) => s.address === 'bounce-later@dest.test' && s.reason === 'hard_bounce' && s.origin === 'dsn'));
    t.ok(sup.some((s: any) => s.address === 'complain-now@dest.test' && s.reason === 'complaint' && s.stream === 'bulk'), 'a complaint stops both streams');
  });

  t.test('a forged bounce (unsigned or wrongly signed VERP) suppresses nothing; a signed one does', async (t) => {
    const r = await send({ to: ['victim@dest.test'] });
    const id = r.json.data.messages[0].messageId;
    await f.waitStatus(id, ['delivered']);
    const signed = sim.received('victim@dest.test')[0].mailFrom;
    const bounceTo = async (rcpt: string) => {
      const raw = buildDsn({ reportingMta: 'mx.attacker.test', to: rcpt, from: 'MAILER-DAEMON@mx.attacker.test', recipient: 'victim@dest.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 forged', originalHeaders: `Message-ID: <${id}@example.test>` });
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port: f.svc.inbound.port, secure: false, ignoreTLS: true });
      try {
        await transport.sendMail({ envelope: { from: '', to: [rcpt] }, raw });
        return 'accepted';
      } catch (err) {
        return String((err as { responseCode?: number }).responseCode);
      } finally {
        transport.close();
      }
    };
    t.equal(await bounceTo(`b+${id}@bounces.ferry.localhost`), '550', 'the unsigned form is refused at RCPT');
    const tag = /-([0-9a-f]{12})@/.exec(signed)![1];
    const wrong = signed.replace(tag, tag.startsWith('0') ? '1' + tag.slice(1) : '0' + tag.slice(1));
    t.equal(await bounceTo(wrong), '550', 'a wrong tag is refused at RCPT');
    t.equal((await f.api('GET', `/v1/email/messages/${id}`)).json.data.status, 'delivered', 'the message is untouched');
    const sup = (await f.api('GET', '/v1/email/suppressions')).json.data;
    t.notOk(sup.some((x: any) => x.address === 'victim@dest.test'), 'the recipient is not suppressed');
    const m = await call(f.d.admin, 'GET', '/metrics');
    t.match(m.text, /^ferry_email_inbound_refused_total\{reason="unsigned"\} 1$/m, 'counted');
    t.match(m.text, /^ferry_email_inbound_refused_total\{reason="bad_signature"\} 1$/m);

    t.equal(await bounceTo(signed), 'accepted', 'the signed return path takes the DSN');
    await f.waitStatus(id, ['bounced']);
    const after = (await f.api('GET', '/v1/email/suppressions')).json.data;
    t.ok(after.some((x: any) => x.address === 'victim@dest.test' && x.reason === 'hard_bounce' && x.origin === 'dsn'), 'and suppresses');
  });

  t.test('from as other email APIs take it: "Name <address>"', async (t) => {
    const named = await send({ from: 'Acme <hello@example.test>', to: ['named@dest.test'] });
    t.equal(named.status, 200, named.text);
    await f.waitStatus(named.json.data.messages[0].messageId, ['delivered']);
    t.match(sim.received('named@dest.test')[0].raw, /^From: Acme <hello@example\.test>/m, 'the display name is the header\'s');
    const quoted = await send({ from: '"Acme, Inc." <Hello@Example.test>', fromName: 'Acme, Inc.', to: ['quoted@dest.test'] });
    t.equal(quoted.status, 200, 'a quoted name with a comma, and the same name in fromName beside it');
    await f.waitStatus(quoted.json.data.messages[0].messageId, ['delivered']);
    t.match(sim.received('quoted@dest.test')[0].raw, /^From: "Acme, Inc." <hello@example\.test>/m);
    const both = await send({ from: 'Acme <hello@example.test>', fromName: 'Other', to: ['both@dest.test'] });
    t.equal(both.status, 400);
    t.equal(both.json.code, 'VALIDATION_ERROR');
    t.same(both.json.data.errors.map((e: { field: string }) => e.field), ['fromName'], 'two different names: refused, naming fromName');
    const broken = await send({ from: 'Acme <not an address>', to: ['x@dest.test'] });
    t.equal(broken.json.code, 'VALIDATION_ERROR');
    t.same(broken.json.data.errors.map((e: { field: string }) => e.field), ['from']);
  });

  t.test('validation', async (t) => {
    t.equal((await send({ from: 'x@unknown.test', to: ['a@dest.test'] })).json.code, 'SENDER_DOMAIN_UNKNOWN');
    const many = Array.from({ length: 51 }, (_, i) => `r${i}@dest.test`);
    t.equal((await send({ to: many.slice(0, 40), cc: many.slice(40) })).json.code, 'VALIDATION_ERROR');
    t.equal((await send({ to: ['a@dest.test'], text: undefined })).json.code, 'VALIDATION_ERROR');
    const big = Buffer.alloc(10 * 1024 * 1024 + 1).toString('base64');
    const r = await send({ to: ['a@dest.test'], attachments: [{ filename: 'big.bin', content: big }] });
    t.equal(r.status, 413);
    t.equal(r.json.code, 'ATTACHMENTS_TOO_LARGE');
    t.equal((await send({ to: ['a@dest.test'], headers: { Bcc: 'x@y.z' } })).json.code, 'VALIDATION_ERROR');
    t.equal((await f.api('GET', '/v1/email/messages/em_nope')).json.code, 'EMAIL_NOT_FOUND');
  });

  t.test('Idempotency-Key: the same send once', async (t) => {
    const a = await send({ to: ['idem@dest.test'] }, { 'idempotency-key': 'k1' });
    const b = await send({ to: ['idem@dest.test'] }, { 'idempotency-key': 'k1' });
    t.same(b.json.data, a.json.data);
    t.equal(b.headers.get('idempotent-replayed'), 'true');
    await f.waitStatus(a.json.data.messages[0].messageId, ['delivered']);
    t.equal(sim.received('idem@dest.test').length, 1);
  });
});
