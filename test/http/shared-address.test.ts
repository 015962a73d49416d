import t from 'tap';
import { forwardingHeader, isPrivateAddress, SharedAddressWarning } from '../../src/http/shared-address.js';

t.test('private (proxy-like) addresses: RFC 1918, 100.64/10 and fc00::/7, mapped forms too; not loopback or public', async (t) => {
  const cases: Array<[string, boolean]> = [
    ['10.0.0.1', true],
    ['10.255.255.255', true],
    ['172.16.0.1', true],
    ['172.31.255.254', true],
    ['172.15.255.255', false],
    ['172.32.0.1', false],
    ['192.168.1.10', true],
    ['192.169.0.1', false],
    ['100.64.0.1', true],
    ['100.127.255.255', true],
    ['100.63.255.255', false],
    ['100.128.0.1', false],
    ['fc00::1', true],
    ['fd12:3456:789a::1', true],
    ['FD00::1', true],
    ['fe80::1', false],
    ['::ffff:10.1.2.3', true],
    ['::ffff:192.168.0.1', true],
    ['::ffff:127.0.0.1', false],
    ['::ffff:8.8.8.8', false],
    ['127.0.0.1', false],
    ['::1', false],
    ['8.8.8.8', false],
    ['1.1.1.1', false],
    ['2001:db8::1', false],
    ['169.254.1.1', false],
    ['', false],
    ['not an address', false],
    ['fc', false],
  ];
  for (const [ip, want] of cases) t.equal(isPrivateAddress(ip), want, ip || '(empty)');
});

t.test('forwarding headers', async (t) => {
  t.equal(forwardingHeader({}), null);
  t.equal(forwardingHeader({ 'x-forwarded-for': '1.2.3.4' }), 'X-Forwarded-For');
  t.equal(forwardingHeader({ forwarded: 'for=1.2.3.4' }), 'Forwarded');
  t.equal(forwardingHeader({ 'x-real-ip': '1.2.3.4' }), 'X-Real-IP');
});

t.test('one warning per address, for private addresses or forwarding headers, and bounded', async (t) => {
  const seen: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const w = new SharedAddressWarning({ warn: ((obj: Record<string, unknown>, msg: string) => seen.push({ obj, msg })) as never }, 3);
  w.check('8.8.8.8', {});
  w.check('127.0.0.1', {});
  w.check(undefined, { 'x-forwarded-for': '1.2.3.4' });
  t.equal(seen.length, 0, 'public and loopback addresses without forwarding headers are not proxies');
  w.check('10.0.0.5', {});
  w.check('10.0.0.5', {});
  w.check('10.0.0.5', { 'x-forwarded-for': '1.2.3.4' });
  t.equal(seen.length, 1, 'once per address');
  t.match(seen[0].obj, { address: '10.0.0.5', reason: 'a private network address', trustProxy: false });
  t.match(seen[0].msg, /http\.trustProxy/);
  w.check('127.0.0.1', { 'x-forwarded-for': '1.2.3.4' });
  t.match(seen[1].obj, { address: '127.0.0.1', reason: 'the request carries X-Forwarded-For' });
  w.check('192.168.0.2', {});
  t.equal(seen.length, 3);
  t.match(seen[2].msg, /3 addresses reported, further ones are not/, 'the last one says the list is full');
  w.check('192.168.0.3', {});
  w.check('172.16.0.1', { forwarded: 'for=x' });
  t.equal(seen.length, 3, 'no more warnings (or memory) past the bound');
  t.equal(w.size, 3);
});
