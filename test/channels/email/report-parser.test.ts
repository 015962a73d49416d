import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { VerpSigner } from '../../../src/channels/email/verp.js';
import { parseReport } from '../../../src/channels/email/report-parser.js';
import { classifySmtpError, isHardBounce } from '../../../src/channels/email/providers/smtp-errors.js';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, 'fixtures', name));

// Real-shaped report mail (Postfix DSN, a base64 delay DSN, RFC 5965's ARF example), read as a table.
const CASES = [
  { file: 'postfix-dsn-failed.eml', want: { kind: 'dsn', action: 'failed', status: '5.1.1', recipient: 'gone@example.net', originalMessageId: 'em_01m8cnf16ymwvtfy30bptzassh' }, diag: /550 5\.1\.1 <gone@example\.net>: Recipient address rejected: User unknown/ },
  { file: 'exchange-dsn-delayed-base64.eml', want: { kind: 'dsn', action: 'delayed', status: '4.4.7', recipient: 'slow@example.org' }, diag: /451 4\.4\.7 timeout/ },
  { file: 'arf-abuse.eml', want: { kind: 'complaint', feedbackType: 'abuse', recipient: 'user@example.com', originalMessageId: 'em_01m8cnf16ymwvtfy30bptzassj' } },
  { file: 'not-a-report.eml', want: null },
] as const;

t.test('DSN and ARF fixtures', async (t) => {
  for (const c of CASES) {
    const r = await parseReport(fixture(c.file));
    if (c.want === null) t.equal(r, null, `${c.file}: not a report`);
    else t.match(r, c.want, c.file);
    if ('diag' in c && c.diag) t.match((r as { diagnostic: string }).diagnostic, c.diag, `${c.file}: diagnostic unfolded`);
  }
});

t.test('VERP addresses: signed, and only the signed form names a message', async (t) => {
  const id = 'em_01m8cnf16ymwvtfy30bptzassh';
  const verp = new VerpSigner(Buffer.alloc(32, 7), 'bounces.ferry.localhost');
  const signed = verp.address(id);
  t.match(signed, /^b\+em_01m8cnf16ymwvtfy30bptzassh-[0-9a-f]{12}@bounces\.ferry\.localhost$/);
  t.equal(verp.messageId(signed), id);
  t.equal(verp.messageId(signed.toUpperCase()), id, 'an MTA folding the case does not break it');
  t.same(verp.check(`b+${id}@bounces.ferry.localhost`), { refused: 'unsigned' }, 'the unsigned form names nothing');
  const wrongTag = signed.replace(/-[0-9a-f]{12}@/, (m) => `-${m[1] === '0' ? '1' : '0'}${m.slice(2)}`);
  t.same(verp.check(wrongTag), { refused: 'bad_signature' });
  t.same(verp.check(new VerpSigner(Buffer.alloc(32, 8), 'bounces.ferry.localhost').address(id)), { refused: 'bad_signature' }, 'another key signs differently');
  t.same(verp.check(signed.replace('bounces.ferry.localhost', 'other.test')), { refused: 'not_verp' }, 'another domain');
  t.same(verp.check('postmaster@bounces.ferry.localhost'), { refused: 'not_verp' });
});

t.test('the SMTP error table', async (t) => {
  const rows: Array<[unknown, string, string, boolean]> = [
    [{ responseCode: 550, response: '550 5.1.1 user unknown' }, 'fail', 'MAILBOX_UNAVAILABLE', true],
    [{ responseCode: 554, response: '554 5.7.1 rejected' }, 'fail', 'TRANSACTION_FAILED', true],
    [{ responseCode: 557, response: '557 odd' }, 'fail', 'TRANSACTION_FAILED', true],
    [{ responseCode: 451, response: '451 4.7.1 greylisted' }, 'retry', 'TEMPORARY_FAILURE', false],
    [{ responseCode: 421, response: '421 too busy' }, 'retry', 'RELAY_BUSY', false],
    [{ responseCode: 499, response: '499 unknown temp' }, 'retry', 'TEMPORARY_FAILURE', false],
    [{ code: 'ECONNECTION', message: 'connect ECONNREFUSED' }, 'retry', 'RELAY_UNREACHABLE', false],
    [{ code: 'EAUTH', message: 'Invalid login' }, 'retry', 'RELAY_AUTH_FAILED', false],
    [new Error('anything else'), 'retry', 'RELAY_UNREACHABLE', false],
  ];
  for (const [err, kind, code, hard] of rows) {
    const r = classifySmtpError(err);
    t.equal(r.kind, kind, `${JSON.stringify(err)} → ${kind}`);
    t.equal(r.code, code);
    t.equal(isHardBounce(r.providerCode) && r.kind === 'fail', hard, `hard bounce: ${hard}`);
  }
  t.equal(classifySmtpError({ responseCode: 421 }).kind === 'retry' && (classifySmtpError({ responseCode: 421 }) as { throttled?: boolean }).throttled, true, '421 pauses the relay');
});
