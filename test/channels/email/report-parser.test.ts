import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { verpMessageId } from '../../../src/channels/email/inbound-listener.js';
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

t.test('VERP addresses', async (t) => {
  t.equal(verpMessageId('b+em_01m8cnf16ymwvtfy30bptzassh@bounces.ferry.localhost', 'bounces.ferry.localhost'), 'em_01m8cnf16ymwvtfy30bptzassh');
  t.equal(verpMessageId('b+em_01m8cnf16ymwvtfy30bptzassh@other.test', 'bounces.ferry.localhost'), null, 'another domain');
  t.equal(verpMessageId('postmaster@bounces.ferry.localhost', 'bounces.ferry.localhost'), null, 'not a VERP address');
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
