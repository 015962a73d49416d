// The one guarded HTTP client for customers' URLs (webhooks, USSD apps, media): the address table, names resolved
// through an injected lookup and every address checked, the connection pinned to a checked address (over HTTPS with the
// certificate checked against the name), no redirects, bodies bounded by the bytes read, timeouts, typed errors.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { addressRefusal, GuardedHttp, GuardedHttpError, GuardedResolver, judgeAddress, type Lookup } from '../../src/security/guarded-http.js';

/** A lookup answering from a table (anything else does not resolve), counting its calls. */
function tableLookup(table: Record<string, string[]>): Lookup & { calls: number } {
  const fn = Object.assign(
    async (host: string) => {
      fn.calls++;
      const list = table[host];
      if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
    { calls: 0 },
  );
  return fn;
}

function client(allowPrivateTargets: boolean, lookup: Lookup, o: { ca?: string; httpsOnly?: boolean } = {}): GuardedHttp {
  return new GuardedHttp({ resolver: new GuardedResolver({ allowPrivateTargets, httpsOnly: o.httpsOnly ?? false }, { lookup }), ca: o.ca });
}

async function kindOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return err instanceof GuardedHttpError ? err.kind : `untyped: ${(err as Error).message}`;
  }
}

async function listen<S extends { listen: TcpServer['listen']; address: TcpServer['address'] }>(server: S): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return (server.address() as AddressInfo).port;
}

t.test('every address family of the table: public, private (only where allowed), blocked (never)', async (t) => {
  const table: Array<[string, 'public' | 'private' | 'blocked']> = [
    ['93.184.216.34', 'public'],
    ['2606:2800:220:1:248:1893:25c8:1946', 'public'],
    ['::ffff:93.184.216.34', 'public'],
    ['64:ff9b::5db8:d822', 'public'], // NAT64 of 93.184.216.34
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['127.0.0.1', 'private'],
    ['0.0.0.0', 'private'],
    ['::1', 'private'],
    ['::', 'private'],
    ['fd12:3456::1', 'private'],
    // IPv4-mapped in every spelling: judged as its IPv4.
    ['::ffff:127.0.0.1', 'private'],
    ['::ffff:7f00:1', 'private'],
    ['0:0:0:0:0:ffff:7f00:1', 'private'],
    ['::FFFF:10.0.0.1', 'private'],
    ['0000:0000:0000:0000:0000:ffff:0a00:0001', 'private'],
    // NAT64 (well-known prefix) carrying a private IPv4.
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::a00:1', 'private'],
    // Cloud metadata and link-local: never, whatever the policy.
    ['169.254.169.254', 'blocked'],
    ['169.254.1.1', 'blocked'],
    ['fd00:ec2::254', 'blocked'],
    ['fe80::1', 'blocked'],
    ['fe80::1%eth0', 'blocked'],
    ['::ffff:169.254.169.254', 'blocked'],
    ['::ffff:a9fe:a9fe', 'blocked'],
    ['64:ff9b::169.254.169.254', 'blocked'],
    // Forms that tunnel to an arbitrary IPv4 address: never.
    ['::127.0.0.1', 'blocked'], // IPv4-compatible
    ['::10.0.0.1', 'blocked'],
    ['::a9fe:a9fe', 'blocked'],
    ['::ffff:0:7f00:1', 'blocked'], // IPv4-translated
    ['2002:7f00:1::1', 'blocked'], // 6to4 of 127.0.0.1
    ['2002:5db8:d822::1', 'blocked'], // 6to4 of a public address
    ['64:ff9b:1::a00:1', 'blocked'], // local-use NAT64
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'blocked'], // Teredo
    // Multicast, reserved, documentation.
    ['224.0.0.1', 'blocked'],
    ['255.255.255.255', 'blocked'],
    ['240.0.0.1', 'blocked'],
    ['192.0.2.1', 'blocked'],
    ['ff02::1', 'blocked'],
    ['2001:db8::1', 'blocked'],
    ['100::1', 'blocked'],
    ['not-an-ip', 'blocked'],
  ];
  for (const [address, verdict] of table) {
    t.equal(judgeAddress(address).verdict, verdict, `${address}: ${verdict} (${judgeAddress(address).why})`);
    t.equal(addressRefusal(address, false) === null, verdict === 'public', `${address} with private targets refused`);
    t.equal(addressRefusal(address, true) === null, verdict !== 'blocked', `${address} with private targets allowed`);
  }
  // The same through the resolver: as a name's answer and as a URL literal (which the URL parser respells).
  for (const allow of [false, true]) {
    const resolver = new GuardedResolver({ allowPrivateTargets: allow, httpsOnly: false }, { lookup: tableLookup({}) });
    for (const [address, verdict] of table) {
      if (!address.includes(':') || address.includes('%')) continue;
      const expected = verdict === 'public' || (verdict === 'private' && allow) ? 'ok' : 'TARGET_BLOCKED';
      t.equal(await kindOf(resolver.resolve(`https://[${address}]/x`)), expected, `https://[${address}]/ (private ${allow ? 'allowed' : 'refused'})`);
    }
    const v4 = new GuardedResolver({ allowPrivateTargets: allow, httpsOnly: false }, { lookup: tableLookup({ 'meta.test': ['169.254.169.254'], 'mapped.test': ['::ffff:a9fe:a9fe'], 'nat64.test': ['64:ff9b::a9fe:a9fe'] }) });
    for (const host of ['meta.test', 'mapped.test', 'nat64.test']) t.equal(await kindOf(v4.resolve(`http://${host}/`)), 'TARGET_BLOCKED', `${host} → metadata, private ${allow ? 'allowed' : 'refused'}`);
    t.equal(await kindOf(v4.resolve('http://169.254.169.254/latest/meta-data/')), 'TARGET_BLOCKED');
    t.equal(await kindOf(v4.resolve('http://[fd00:ec2::254]/')), 'TARGET_BLOCKED');
  }
});

t.test('names: every resolved address checked; DNS failures and bad URLs typed', async (t) => {
  const lookup = tableLookup({
    'public.test': ['93.184.216.34'],
    'private.test': ['10.1.2.3'],
    'both.test': ['93.184.216.34', '10.1.2.3'],
    'both6.test': ['2606:2800:220:1:248:1893:25c8:1946', 'fd00::1'],
    'empty.test': [],
  });
  const on = new GuardedResolver({ allowPrivateTargets: false, httpsOnly: true }, { lookup });
  t.equal(await kindOf(on.resolve('https://public.test/x')), 'ok');
  t.equal(await kindOf(on.resolve('https://private.test/x')), 'TARGET_BLOCKED', 'a name resolving to a private address');
  t.equal(await kindOf(on.resolve('https://both.test/x')), 'TARGET_BLOCKED', 'one public and one private address: refused');
  t.equal(await kindOf(on.resolve('https://both6.test/x')), 'TARGET_BLOCKED', 'the same over IPv6');
  t.equal(await kindOf(on.resolve('https://nowhere.test/x')), 'DNS_FAILED');
  t.equal(await kindOf(on.resolve('https://empty.test/x')), 'DNS_FAILED');
  t.equal(await kindOf(on.resolve('http://public.test/x')), 'INVALID_URL', 'plain http where https only');
  t.equal(await kindOf(on.resolve('ftp://public.test/x')), 'INVALID_URL');
  t.equal(await kindOf(on.resolve('https://u:p@public.test/x')), 'INVALID_URL');
  t.equal(await kindOf(on.resolve('nonsense')), 'INVALID_URL');
  const open = new GuardedResolver({ allowPrivateTargets: true, httpsOnly: false }, { lookup });
  t.equal(await kindOf(open.resolve('http://both.test/x')), 'ok', 'private allowed by the policy');
});

t.test('HTTPS to a hostname with the guard on: resolved through the injected lookup, pinned, certificate checked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-guard-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=files.test', '-addext', 'subjectAltName=DNS:files.test'], { stdio: 'ignore' });
  const ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
  let hits = 0;
  const server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: ca }, (req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'text/plain', 'x-host': req.headers.host ?? '' }).end('hello');
  });
  const port = await listen(server);
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  // files.test and other.test do not resolve (reserved TLD): only the injected lookup leads to the server.
  const lookup = tableLookup({ 'files.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'], 'mixed.test': ['127.0.0.1', '169.254.169.254'] });
  const c = client(true, lookup, { ca, httpsOnly: true });
  t.teardown(() => c.close());
  const r = await c.request(`https://files.test:${port}/a`, { timeoutMs: 5000, maxBytes: 1000 });
  t.equal(r.status, 200);
  t.equal(r.body.toString(), 'hello');
  t.equal(r.headers['x-host'], `files.test:${port}`, 'the Host header names the name, not the address');
  t.equal(lookup.calls, 1, 'resolved once, by the injected lookup');
  t.equal(await kindOf(c.request(`https://other.test:${port}/a`, { timeoutMs: 5000, maxBytes: 1000 })), 'CONNECTION_FAILED', 'TLS checks the certificate against the URL name');
  const before = hits;
  t.equal(await kindOf(c.request(`https://mixed.test:${port}/a`, { timeoutMs: 5000, maxBytes: 1000 })), 'TARGET_BLOCKED', 'one address is cloud metadata: refused');
  t.equal(await kindOf(c.request(`https://[::ffff:169.254.169.254]:${port}/a`, { timeoutMs: 5000, maxBytes: 1000 })), 'TARGET_BLOCKED');
  t.equal(hits, before, 'nothing was sent for a refused target');
  const off = client(false, lookup, { ca });
  t.teardown(() => off.close());
  t.equal(await kindOf(off.request(`https://files.test:${port}/a`, { timeoutMs: 5000, maxBytes: 1000 })), 'TARGET_BLOCKED', 'loopback refused where private targets are not allowed');
  const stream = await c.open(`https://files.test:${port}/a`, { timeoutMs: 5000, maxBytes: 1000 });
  const chunks: Buffer[] = [];
  for await (const chunk of stream.chunks()) chunks.push(chunk);
  t.equal(Buffer.concat(chunks).toString(), 'hello', 'streamed');
});

t.test('HTTP: no redirects, bodies bounded by the bytes read, timeouts, refused connections', async (t) => {
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/redirect': (_req, res) => void res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    '/small': (_req, res) => void res.writeHead(200, { 'content-length': '5' }).end('small'),
    '/chunked': (_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 20; i++) res.write(Buffer.alloc(1000, 97));
      res.end();
    },
    '/declared-big': (_req, res) => void res.writeHead(200, { 'content-length': '50000' }).end(Buffer.alloc(50000)),
    '/hang': () => undefined,
    '/stall': (_req, res) => {
      res.writeHead(200);
      res.write('part');
    },
  };
  const server = createHttpServer((req, res) => (routes[req.url ?? ''] ?? ((_q, s) => void s.writeHead(404).end()))(req, res));
  const port = await listen(server);
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const c = client(true, tableLookup({ 'app.test': ['127.0.0.1'] }));
  t.teardown(() => c.close());
  const url = (path: string) => `http://app.test:${port}${path}`;

  const redirect = await c.request(url('/redirect'), { timeoutMs: 5000, maxBytes: 1000 });
  t.equal(redirect.status, 302, 'a 3xx is the answer: never followed');
  t.equal(redirect.headers.location, 'http://169.254.169.254/latest/meta-data/');

  t.equal((await c.request(url('/small'), { timeoutMs: 5000, maxBytes: 5 })).body.toString(), 'small', 'exactly the bound is fine');
  t.equal(await kindOf(c.request(url('/chunked'), { timeoutMs: 5000, maxBytes: 5000 })), 'TOO_LARGE', 'chunked, no Content-Length: cut past the bound');
  const stream = await c.open(url('/chunked'), { timeoutMs: 5000, maxBytes: 5000 });
  let read = 0;
  const streamed = await kindOf(
    (async () => {
      for await (const chunk of stream.chunks()) read += chunk.length;
    })(),
  );
  t.equal(streamed, 'TOO_LARGE', 'streamed: the same');
  t.ok(read <= 5000, `no more than the bound handed on (${read})`);
  const cut = await c.request(url('/chunked'), { timeoutMs: 5000, maxBytes: 5000, overflow: 'cut' });
  t.same([cut.status, cut.complete, cut.bytes <= 5000], [200, false, true], "'cut': the status answers, the body is cut");
  t.equal(await kindOf(c.request(url('/declared-big'), { timeoutMs: 5000, maxBytes: 1000 })), 'TOO_LARGE', 'a declared size past the bound');

  t.equal(await kindOf(c.request(url('/hang'), { timeoutMs: 200, maxBytes: 1000 })), 'TIMEOUT', 'no answer');
  t.equal(await kindOf(c.request(url('/stall'), { timeoutMs: 200, maxBytes: 1000 })), 'TIMEOUT', 'an answer that stops mid-body');
  const stalled = await c.open(url('/stall'), { timeoutMs: 200, maxBytes: 1000 });
  const drain = async () => {
    for await (const chunk of stalled.chunks()) void chunk;
  };
  t.equal(await kindOf(drain()), 'TIMEOUT', 'streamed: the same');
  const slowDns = client(true, () => new Promise(() => undefined));
  t.equal(await kindOf(slowDns.request('http://slow.test/', { timeoutMs: 200, maxBytes: 1000 })), 'TIMEOUT', 'a lookup that never answers');

  // A TLS handshake that never completes: the connection is not established within connectTimeoutMs.
  const silent = createTcpServer((s) => s.on('error', () => undefined));
  const silentPort = await listen(silent);
  t.teardown(() => silent.close());
  const tls = client(true, tableLookup({}));
  t.teardown(() => tls.close());
  const connect = tls.request(`https://127.0.0.1:${silentPort}/`, { timeoutMs: 10_000, connectTimeoutMs: 200, maxBytes: 1000 });
  t.equal(await kindOf(connect), 'TIMEOUT', 'no connection in time');
  await t.rejects(connect, /no connection within 200 ms/);

  const closed = createHttpServer();
  const closedPort = await listen(closed);
  await new Promise<void>((r) => closed.close(() => r()));
  t.equal(await kindOf(c.request(`http://127.0.0.1:${closedPort}/`, { timeoutMs: 5000, maxBytes: 1000 })), 'CONNECTION_REFUSED');
  t.equal(await kindOf(c.request('http://nowhere.test/', { timeoutMs: 5000, maxBytes: 1000 })), 'DNS_FAILED');
});

t.test('a lying or missing Content-Length: the bound is the bytes read', async (t) => {
  // Raw answers: a Content-Length smaller than what follows, and an HTTP/1.0 body ended by closing (no length at all).
  const answers: Record<string, Buffer> = {
    lying: Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n'), Buffer.alloc(100_000, 65)]),
    unframed: Buffer.concat([Buffer.from('HTTP/1.0 200 OK\r\n\r\n'), Buffer.alloc(100_000, 65)]),
  };
  const server = createTcpServer((s) => {
    s.on('error', () => undefined);
    s.once('data', (d) => {
      const path = /^GET \/(\w+)/.exec(d.toString())?.[1] ?? '';
      s.end(answers[path] ?? 'HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
    });
  });
  const port = await listen(server);
  t.teardown(() => server.close());
  const c = client(true, tableLookup({}));
  t.teardown(() => c.close());
  const lying = await c.request(`http://127.0.0.1:${port}/lying`, { timeoutMs: 5000, maxBytes: 1000 });
  t.equal(lying.bytes, 10, 'what the length frames is read, nothing past it');
  t.equal(await kindOf(c.request(`http://127.0.0.1:${port}/unframed`, { timeoutMs: 5000, maxBytes: 1000 })), 'TOO_LARGE', 'no length: counted and cut');
});
