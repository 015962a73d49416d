import dgram from 'node:dgram';
import net from 'node:net';
import fc from 'fast-check';
import t from 'tap';
import { SipParseError, SipStreamFramer, SipTransport, type SipMessage, type SipTarget } from '../../src/sip/index.js';
import { waitFor, type Teardown } from './helpers.js';

const msg = (n: number, body = ''): string =>
  `OPTIONS sip:n${n}@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:1;branch=z9hG4bK${n}\r\nFrom: <sip:a@127.0.0.1>;tag=${n}\r\nTo: <sip:b@127.0.0.1>\r\nCall-ID: c${n}\r\nCSeq: ${n} OPTIONS\r\nl: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

async function transport(t: Teardown, options: ConstructorParameters<typeof SipTransport>[0] = {}): Promise<{ tr: SipTransport; got: Array<[SipMessage, SipTarget]>; invalid: SipParseError[]; warnings: Error[] }> {
  const tr = new SipTransport(options);
  const got: Array<[SipMessage, SipTarget]> = [];
  const invalid: SipParseError[] = [];
  const warnings: Error[] = [];
  tr.on('message', (m, s) => got.push([m, s]));
  tr.on('invalid', (e) => invalid.push(e));
  tr.on('warning', (e) => warnings.push(e));
  await tr.listen();
  t.teardown(() => tr.close());
  return { tr, got, invalid, warnings };
}

function rawTcp(t: Teardown, port: number): Promise<net.Socket & { received: () => string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.on('data', (d) => (data += d.toString('latin1')));
    s.on('error', () => undefined);
    s.once('connect', () => resolve(Object.assign(s, { received: () => data })));
    s.once('error', reject);
    t.teardown(() => s.destroy());
  });
}

t.test('binds 127.0.0.1 on one port for UDP and TCP by default', async (t) => {
  const { tr } = await transport(t);
  t.equal(tr.host, '127.0.0.1');
  t.ok(tr.port > 0);
});

t.test('UDP: a datagram is delivered with its source; CRLF keep-alives and garbage are not', async (t) => {
  const { tr, got, invalid } = await transport(t);
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => sock.close(() => r())));
  for (const d of ['\r\n\r\n', '\r\n', 'garbage \x00\x01', msg(1)]) sock.send(Buffer.from(d, 'latin1'), tr.port, '127.0.0.1');
  await waitFor(() => got.length === 1 && invalid.length === 1);
  t.same(got[0][1], { transport: 'udp', host: '127.0.0.1', port: sock.address().port });
  t.equal(got[0][0].kind === 'request' && got[0][0].uri, 'sip:n1@127.0.0.1');
});

t.test('TCP framing: byte-by-byte, several messages in one chunk, a ping gets a pong', async (t) => {
  const { tr, got } = await transport(t);
  const s = await rawTcp(t, tr.port);
  const one = Buffer.from(msg(1, 'hello'));
  for (let i = 0; i < one.length; i++) {
    s.write(one.subarray(i, i + 1));
    if (i % 50 === 0) await new Promise((r) => setImmediate(r));
  }
  s.write(msg(2) + msg(3, 'x') + '\r\n\r\n' + msg(4));
  await waitFor(() => got.length === 4 && s.received() === '\r\n');
  t.same(got.map(([m]) => m.headers.get('call-id')), ['c1', 'c2', 'c3', 'c4'], 'in order');
  t.equal(got[0][0].body, 'hello');
  t.equal(got[2][0].body, 'x');
  t.equal(s.received(), '\r\n', 'one pong for the ping');
});

t.test('TCP: bad input closes that connection only', async (t) => {
  const { tr, got, warnings } = await transport(t, { maxMessageBytes: 2048 });
  const good = await rawTcp(t, tr.port);
  const cases = [
    msg(1).replace(/l: 0\r\n/, ''), // no Content-Length on a stream
    'X'.repeat(3000), // headers never end, beyond the cap
    msg(2).replace('l: 0', 'l: 5000'), // declared larger than the cap
  ];
  for (const bad of cases) {
    const s = await rawTcp(t, tr.port);
    const closed = new Promise<void>((r) => s.once('close', () => r()));
    s.write(bad);
    await closed;
  }
  t.equal(warnings.length, 3, 'each reported');
  good.write(msg(5));
  await waitFor(() => got.length === 1);
  t.equal(got[0][0].headers.get('call-id'), 'c5', 'the other connection still works');
});

t.test('TCP: outgoing connections are reused per remote; replies come back on them', async (t) => {
  const a = await transport(t);
  const b = await transport(t);
  const target: SipTarget = { transport: 'tcp', host: '127.0.0.1', port: b.tr.port };
  await a.tr.send(Buffer.from(msg(1)), target);
  await a.tr.send(Buffer.from(msg(2)), target);
  await Promise.all([a.tr.send(Buffer.from(msg(3)), target), a.tr.send(Buffer.from(msg(4)), target)]);
  await waitFor(() => b.got.length === 4);
  t.equal(b.tr.connectionCount, 1, 'one connection at the far end');
  t.equal(a.tr.connectionCount, 1, 'one connection here');
  // b answers to the source it saw: the same connection
  await b.tr.send(Buffer.from(msg(9)), b.got[0][1]);
  await waitFor(() => a.got.length === 1);
  t.equal(a.got[0][0].headers.get('call-id'), 'c9');
  t.equal(b.tr.connectionCount, 1, 'no new connection for the reply');
});

t.test('TCP connect to a closed port rejects with SipTransportError; UDP-only refuses TCP sends', async (t) => {
  const a = await transport(t);
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  await t.rejects(a.tr.send(Buffer.from(msg(1)), { transport: 'tcp', host: '127.0.0.1', port }), { name: 'SipTransportError' });
  const u = await transport(t, { transports: ['tcp'] });
  await t.rejects(u.tr.send(Buffer.from(msg(1)), { transport: 'udp', host: '127.0.0.1', port: 9 }), { name: 'SipTransportError' });
});

t.test('framer fuzz: random chunking of a stream of messages yields the same messages', async (t) => {
  const stream = Buffer.from(msg(1, 'abc') + '\r\n\r\n' + msg(2) + '\r\n' + msg(3, 'é'));
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: stream.length }), { maxLength: 20 }), (cuts) => {
      const out: string[] = [];
      let pings = 0;
      const f = new SipStreamFramer((m) => out.push(m.toString('utf8')), () => pings++, 65536);
      const points = [...new Set(cuts)].sort((x, y) => x - y);
      let prev = 0;
      for (const p of [...points, stream.length]) {
        f.push(stream.subarray(prev, p));
        prev = p;
      }
      return out.length === 3 && out[2].endsWith('é') && pings === 1 && f.buffered === 0;
    }),
    { numRuns: 300 },
  );
  let thrownOther = 0;
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
      const f = new SipStreamFramer(() => undefined, () => undefined, 256);
      try {
        f.push(Buffer.from(bytes));
      } catch (err) {
        if (!(err instanceof SipParseError)) thrownOther++;
      }
      return f.buffered <= 256 + 400;
    }),
    { numRuns: 300 },
  );
  t.equal(thrownOther, 0, 'only SipParseError');
});
