import fc from 'fast-check';
import t from 'tap';
import {
  SipHeaders, SipParseError, formatNameAddr, formatUri, formatVia, parseCSeq, parseMessage, parseNameAddr, parseUri, parseVia,
  serializeMessage, type SipRequest,
} from '../../src/sip/index.js';
import { INVALID, VALID, validRaw } from './fixtures/torture.js';

t.test('torture corpus: valid messages parse to the right values', async (t) => {
  for (const c of VALID) {
    const m = parseMessage(validRaw(c));
    t.same(c.check(m), c.expect, c.name);
  }
});

t.test('torture corpus: invalid messages are refused with SipParseError and a reason', async (t) => {
  for (const c of INVALID) {
    let caught: unknown;
    try {
      parseMessage(c.raw);
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof SipParseError, `${c.name}: SipParseError`);
    if (!(caught instanceof SipParseError)) continue;
    t.match(caught.reason, c.reason, `${c.name}: ${caught.reason}`);
    t.equal(caught.request !== undefined, c.answerable === true, `${c.name}: answerable with 400 = ${c.answerable === true}`);
  }
});

t.test('stream mode requires Content-Length', async (t) => {
  const raw = 'OPTIONS sip:a@b.test SIP/2.0\r\nVia: SIP/2.0/TCP h.test;branch=z9hG4bK1\r\nFrom: <sip:x@h.test>;tag=1\r\nTo: <sip:a@b.test>\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\n\r\n';
  t.equal(parseMessage(raw).kind, 'request', 'fine on a datagram');
  t.throws(() => parseMessage(raw, { stream: true }), SipParseError);
});

t.test('serialize then parse round-trips; Content-Length is computed in octets', async (t) => {
  const headers = new SipHeaders([
    ['Via', 'SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKabc;rport'],
    ['Via', 'SIP/2.0/UDP 10.0.0.1;branch=z9hG4bKdef'],
    ['From', '"Zoë" <sip:zoe@example.test>;tag=z'],
    ['To', '<sip:bob@example.test>'],
    ['Call-ID', 'rt@example.test'],
    ['CSeq', '5 MESSAGE'],
    ['Content-Length', '999'],
  ]);
  const req: SipRequest = { kind: 'request', method: 'MESSAGE', uri: 'sip:bob@example.test', headers, body: 'héllo ✓' };
  const wire = serializeMessage(req);
  t.match(wire.toString('utf8'), /\r\nContent-Length: 10\r\n\r\nhéllo ✓$/, 'length in octets, one Content-Length');
  const back = parseMessage(wire);
  t.equal(back.kind, 'request');
  t.equal(back.body, 'héllo ✓');
  t.same(back.headers.getAll('via'), headers.getAll('via'));
  t.equal(parseNameAddr(back.headers.get('f')!).display, 'Zoë');
});

t.test('SipHeaders: case-insensitive, compact names, order, set/prepend/delete', async (t) => {
  const h = new SipHeaders();
  h.append('via', 'a').append('VIA', 'b').append('i', 'cid').append('X-Custom', '1');
  t.same(h.getAll('Via'), ['a', 'b']);
  t.equal(h.get('Call-ID'), 'cid');
  h.prepend('v', 'top');
  t.same(h.getAll('via'), ['top', 'a', 'b']);
  h.set('Via', 'only');
  t.same(h.getAll('via'), ['only']);
  h.delete('x-custom');
  t.same([...h.entries()], [['Via', 'only'], ['Call-ID', 'cid']], 'canonical names written');
});

t.test('URI parse and format', async (t) => {
  const u = parseUri('sip:+4470%20@Example.test:5080;transport=TCP;lr;maddr=10.0.0.1?X-H=a%20b');
  t.same({ ...u, params: { ...u.params }, headers: { ...u.headers } }, {
    scheme: 'sip', user: '+4470 ', host: 'Example.test', port: 5080, params: { transport: 'TCP', lr: null, maddr: '10.0.0.1' }, headers: { 'X-H': 'a b' },
  });
  t.equal(formatUri(parseUri('sip:alice@127.0.0.1:5060;transport=tcp')), 'sip:alice@127.0.0.1:5060;transport=tcp');
  t.equal(parseUri('sip:127.0.0.1').user, undefined);
  for (const bad of ['tel:+1234', 'sip:', 'sip:user@', 'sip:a@b.test:99999', 'sip:a@[::1', 'sip:a b@c.test', 'sip:a@-bad-.test']) {
    t.throws(() => parseUri(bad), SipParseError, bad);
  }
});

t.test('name-addr parse and format', async (t) => {
  const a = parseNameAddr('"A \\"B\\"" <sip:ab@example.test;transport=udp>;tag=xyz;expires=30');
  t.equal(a.display, 'A "B"');
  t.equal(a.uri, 'sip:ab@example.test;transport=udp');
  t.equal(a.tag, 'xyz');
  t.equal(a.sip?.params.transport, 'udp', 'URI params stay in the URI');
  t.equal(a.params.expires, '30');
  const b = parseNameAddr('sip:ab@example.test;tag=9');
  t.equal(b.uri, 'sip:ab@example.test', 'addr-spec: params belong to the header');
  t.equal(b.tag, '9');
  t.equal(parseNameAddr('Bob Smith <sip:b@example.test>').display, 'Bob Smith');
  t.equal(formatNameAddr({ display: 'A "B"', uri: 'sip:ab@example.test', params: { tag: 'x' } }), '"A \\"B\\"" <sip:ab@example.test>;tag=x');
  for (const bad of ['<sip:a@b.test', '"unterminated <sip:a@b.test>', '<sip:a@b.test> junk', 'no-scheme', '<sip:a@b.test>;=x']) {
    t.throws(() => parseNameAddr(bad), SipParseError, bad);
  }
});

t.test('Via parse and format', async (t) => {
  const v = parseVia('SIP/2.0/udp 192.0.2.1:5062;branch=z9hG4bKx;received=10.1.1.1;rport=4000');
  t.same([v.transport, v.host, v.port, v.branch, v.received, v.rport], ['UDP', '192.0.2.1', 5062, 'z9hG4bKx', '10.1.1.1', 4000]);
  t.equal(parseVia('SIP/2.0/TCP h.test;rport;branch=z9hG4bKy').rport, true);
  t.equal(formatVia({ transport: 'tcp', host: '::1', port: 5060, params: { branch: 'z9hG4bKq', rport: null } }), 'SIP/2.0/TCP [::1]:5060;branch=z9hG4bKq;rport');
  for (const bad of ['SIP/2.0 h.test', 'SIP/3.0/UDP h.test', 'SIP/2.0/UDP h.test;rport=x', 'SIP/2.0/UDP h.test;branch', 'SIP/2.0/UDP']) {
    t.throws(() => parseVia(bad), SipParseError, bad);
  }
});

t.test('CSeq parse', async (t) => {
  t.same(parseCSeq(' 0042  INVITE '), { seq: 42, method: 'INVITE' });
  for (const bad of ['INVITE', '1', '-1 INVITE', '2147483648 INVITE', '1 IN VITE']) t.throws(() => parseCSeq(bad), SipParseError, bad);
});

t.test('fuzz: random bytes and mutated messages only ever throw SipParseError', async (t) => {
  const seed = validRaw(VALID[0]);
  let parsed = 0;
  let refused = 0;
  const check = (input: Buffer): void => {
    try {
      parseMessage(input);
      parsed++;
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
      refused++;
    }
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => check(Buffer.from(bytes))), { numRuns: 500 });
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(seed.length - 1), fc.constantFrom(':', ';', '"', '<', '>', ',', ' ', '\r\n', '=', '%', '\\', '')), { maxLength: 6 }), (edits) => {
      let s = seed;
      for (const [pos, ch] of edits) s = s.slice(0, pos) + ch + s.slice(pos + 1);
      check(Buffer.from(s));
    }),
    { numRuns: 1500 },
  );
  t.ok(parsed > 0 && refused > 0, `parsed ${parsed}, refused ${refused}`);
});
