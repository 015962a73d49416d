import t from 'tap';
import {
  DigestServer, SipParseError, buildAuthorization, digestResponse, parseAuthorization, parseChallenge,
} from '../../src/sip/index.js';

t.test('RFC 2617 3.5 worked example (MD5, qop=auth)', async (t) => {
  const challenge = parseChallenge('Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"');
  t.same(challenge, { realm: 'testrealm@host.com', nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093', opaque: '5ccc069c403ebaf9f0171e9517f40e41', algorithm: 'MD5', qop: ['auth', 'auth-int'], stale: false });
  const header = buildAuthorization({ challenge, credentials: { username: 'Mufasa', password: 'Circle Of Life' }, method: 'GET', uri: '/dir/index.html', cnonce: '0a4f113b', nc: 1 });
  const auth = parseAuthorization(header);
  t.equal(auth.response, '6629fae49393a05397450978507c4ef1');
  t.same([auth.username, auth.nc, auth.cnonce, auth.qop, auth.opaque], ['Mufasa', '00000001', '0a4f113b', 'auth', '5ccc069c403ebaf9f0171e9517f40e41']);
});

t.test('RFC 7616 3.9.1 example: MD5 and SHA-256', async (t) => {
  const common = {
    username: 'Mufasa', password: 'Circle of Life', realm: 'http-auth@example.org', nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
    method: 'GET', uri: '/dir/index.html', qop: 'auth', nc: '00000001', cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  };
  t.equal(digestResponse({ ...common, algorithm: 'MD5' }), '8ca523f5e9506fed4657c9700eebdbec');
  t.equal(digestResponse({ ...common, algorithm: 'SHA-256' }), '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1');
});

t.test('challenge parsing: algorithm, stale, no qop; refusals', async (t) => {
  const c = parseChallenge('digest REALM="r", nonce="n", algorithm=MD5-sess, stale=TRUE');
  t.same([c.algorithm, c.stale, c.qop], ['MD5-sess', true, []]);
  t.equal(parseChallenge('Digest realm="r", nonce="n", algorithm=SHA-256').algorithm, 'SHA-256');
  for (const bad of ['Basic realm="r"', 'Digest realm="r"', 'Digest nonce="n"', 'Digest realm="r", nonce="n", algorithm=SHA-512', 'Digest', 'Digest realm="r, nonce=n']) {
    t.throws(() => parseChallenge(bad), SipParseError, bad);
  }
});

t.test('no qop (RFC 2069 style) and -sess variants round-trip through the server hash', async (t) => {
  const noQop = buildAuthorization({ challenge: parseChallenge('Digest realm="r", nonce="abc"'), credentials: { username: 'u', password: 'p' }, method: 'INVITE', uri: 'sip:b@x.test' });
  const a = parseAuthorization(noQop);
  t.equal(a.qop, undefined);
  t.equal(a.cnonce, undefined);
  t.equal(a.response, digestResponse({ algorithm: 'MD5', username: 'u', password: 'p', realm: 'r', nonce: 'abc', method: 'INVITE', uri: 'sip:b@x.test' }));
  const sess = parseAuthorization(buildAuthorization({ challenge: parseChallenge('Digest realm="r", nonce="abc", algorithm=SHA-256-sess, qop="auth"'), credentials: { username: 'u', password: 'p' }, method: 'INVITE', uri: 'sip:b@x.test', cnonce: 'cn' }));
  t.equal(sess.response, digestResponse({ algorithm: 'SHA-256-sess', username: 'u', password: 'p', realm: 'r', nonce: 'abc', method: 'INVITE', uri: 'sip:b@x.test', qop: 'auth', nc: '00000001', cnonce: 'cn' }));
});

t.test('server: challenge, answer, verify; wrong password, unknown user, forged and expired nonces', async (t) => {
  let now = 1_700_000_000_000;
  const users: Record<string, string> = { alice: 'secret' };
  const lookup = (u: string): string | undefined => users[u];
  for (const algorithm of ['MD5', 'SHA-256'] as const) {
    const server = new DigestServer({ realm: 'ferry.test', nonceTtlMs: 60_000, algorithm, now: () => now });
    const challenge = parseChallenge(server.challenge());
    t.equal(challenge.algorithm, algorithm);
    t.same(challenge.qop, ['auth']);
    const answer = (password: string, username = 'alice'): string =>
      buildAuthorization({ challenge, credentials: { username, password }, method: 'INVITE', uri: 'sip:bob@ferry.test' });

    t.same(server.verify(answer('secret'), 'INVITE', lookup), { ok: true, username: 'alice' }, `${algorithm}: right password`);
    t.match(server.verify(answer('wrong'), 'INVITE', lookup), { ok: false, stale: false }, 'wrong password');
    t.match(server.verify(answer('secret', 'mallory'), 'INVITE', lookup), { ok: false, stale: false }, 'unknown user');
    t.match(server.verify(answer('secret'), 'BYE', lookup), { ok: false }, 'method is bound into the digest');

    const other = new DigestServer({ realm: 'ferry.test', algorithm, now: () => now });
    const forged = buildAuthorization({ challenge: parseChallenge(other.challenge()), credentials: { username: 'alice', password: 'secret' }, method: 'INVITE', uri: 'sip:bob@ferry.test' });
    t.match(server.verify(forged, 'INVITE', lookup), { ok: false, stale: false, reason: 'nonce not ours' }, 'a nonce from another secret is refused');

    const tampered = answer('secret').replace(/nonce="([^"]+)"/, (_m, n: string) => `nonce="${n.slice(0, 2)}${n[2] === 'A' ? 'B' : 'A'}${n.slice(3)}"`);
    t.match(server.verify(tampered, 'INVITE', lookup), { ok: false, stale: false }, 'a tampered nonce is refused');

    const fresh = answer('secret');
    now += 61_000;
    t.same(server.verify(fresh, 'INVITE', lookup), { ok: false, stale: true, reason: 'nonce expired' }, 'expired: stale=true');
    t.match(parseChallenge(server.challenge(true)), { stale: true });
    t.match(server.verify(buildAuthorization({ challenge: parseChallenge(server.challenge()), credentials: { username: 'alice', password: 'secret' }, method: 'INVITE', uri: 'sip:x' }), 'INVITE', lookup), { ok: true }, 'a new nonce works');
    t.match(server.verify('Digest username="alice"', 'INVITE', lookup), { ok: false, stale: false }, 'incomplete header');
    t.match(server.verify('Basic YWxpY2U6c2VjcmV0', 'INVITE', lookup), { ok: false, stale: false }, 'Basic refused');
  }
});
