import t from 'tap';
import { backendLabel } from '../../helpers/env.js';
import { ANDROID_UA, IPHONE_UA, shortlinkDaemon, visit } from './helpers.js';

t.test(`short links: CRUD, validation and the redirect (${backendLabel})`, async (t) => {
  const s = await shortlinkDaemon({ FERRY_SHORTLINK_DENY_HOSTS: 'evil.example' });
  t.teardown(() => s.d.stop());

  t.test('create with a generated slug; shortUrl from the listener; the password never returned', async (t) => {
    const r = await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/a', title: 'A', tags: ['x'], password: 'hunter22' });
    t.equal(r.status, 201, r.text);
    const l = r.json.data;
    t.match(l.id, /^lnk_/);
    t.match(l.slug, /^[23456789a-km-zA-HJ-NP-Z]{7}$/);
    t.equal(l.shortUrl, `${s.redirect}/${l.slug}`);
    t.equal(l.hasPassword, true);
    t.notOk('password' in l);
    t.notMatch(r.text, /hunter22|scrypt/);
    const g = await s.api('GET', `/v1/shortlink/links/${l.id}`);
    t.same(g.json.data, l);
  });

  t.test('validation: http(s) only, slug rules, reserved words, taken slugs, deny-list, externalId', async (t) => {
    const bad = await s.api('POST', '/v1/shortlink/links', { url: 'javascript:alert(1)', slug: 'bad slug!' });
    t.equal(bad.status, 400);
    t.equal(bad.json.code, 'VALIDATION_ERROR');
    t.same(bad.json.data.errors.map((e: { field: string }) => e.field).sort(), ['slug', 'url']);
    const ftp = await s.api('POST', '/v1/shortlink/links', { url: 'ftp://example.com/file' });
    t.equal(ftp.json.code, 'VALIDATION_ERROR');
    const reserved = await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com', slug: 'Admin' });
    t.equal(reserved.json.code, 'VALIDATION_ERROR');
    t.match(reserved.json.data.errors[0].message, /reserved/);
    const slug = `mine-${process.pid}`;
    t.equal((await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com', slug })).status, 201);
    const taken = await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com', slug });
    t.equal(taken.status, 409);
    t.equal(taken.json.code, 'SLUG_TAKEN');
    const denied = await s.api('POST', '/v1/shortlink/links', { url: 'https://www.evil.example/x' });
    t.equal(denied.status, 422);
    t.equal(denied.json.code, 'DESTINATION_DENIED');
    const loop = await s.api('POST', '/v1/shortlink/links', { url: `${s.redirect}/anything` });
    t.equal(loop.json.code, 'DESTINATION_DENIED', 'a destination on the short link address itself');
    t.equal((await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com', externalId: 'e1' })).status, 201);
    const dup = await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com', externalId: 'e1' });
    t.equal(dup.json.code, 'EXTERNAL_ID_TAKEN');
    t.equal((await s.api('GET', '/v1/shortlink/links/lnk_nope')).json.code, 'SHORTLINK_NOT_FOUND');
  });

  t.test('list with tag, search and cursor; patch; delete', async (t) => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await s.api('POST', '/v1/shortlink/links', { url: `https://list.example/${i}`, tags: ['page'], title: `Page ${i}` })).json.data.id);
    const p1 = await s.api('GET', '/v1/shortlink/links?tag=page&limit=2');
    t.same(p1.json.data.links.map((l: { id: string }) => l.id), [ids[2], ids[1]]);
    const p2 = await s.api('GET', `/v1/shortlink/links?tag=page&limit=2&cursor=${p1.json.data.nextCursor}`);
    t.same(p2.json.data.links.map((l: { id: string }) => l.id), [ids[0]]);
    t.equal(p2.json.data.nextCursor, null);
    const found = await s.api('GET', '/v1/shortlink/links?search=Page%201');
    t.same(found.json.data.links.map((l: { id: string }) => l.id), [ids[1]]);
    const p = await s.api('PATCH', `/v1/shortlink/links/${ids[0]}`, { title: null, url: 'https://list.example/changed' });
    t.equal(p.status, 200, p.text);
    t.equal(p.json.data.title, null);
    t.equal(p.json.data.url, 'https://list.example/changed');
    t.same(p.json.data.tags, ['page']);
    const del = await s.api('DELETE', `/v1/shortlink/links/${ids[0]}`);
    t.equal(del.json.data.deleted, true);
    t.equal((await s.api('GET', `/v1/shortlink/links/${ids[0]}`)).status, 404);
    t.equal((await visit(s.redirect, p.json.data.slug)).status, 404);
  });

  t.test('redirect: 302 with UTM merged without clobbering; per-platform destinations; caching headers', async (t) => {
    const l = (
      await s.api('POST', '/v1/shortlink/links', {
        url: 'https://shop.example/p?utm_source=newsletter&x=1',
        utm: { source: 'sms', medium: 'text', campaign: 'spring sale' },
        ios: 'https://apps.example/ios',
        android: 'https://play.example/android',
      })
    ).json.data;
    const r = await visit(s.redirect, l.slug);
    t.equal(r.status, 302);
    const u = new URL(r.location!);
    t.equal(u.searchParams.get('utm_source'), 'newsletter', 'an existing utm_source is kept');
    t.equal(u.searchParams.get('utm_medium'), 'text');
    t.equal(u.searchParams.get('utm_campaign'), 'spring sale');
    t.equal(u.searchParams.get('x'), '1');
    t.equal(r.cacheControl, null, 'an unguarded 302 carries no freshness');
    t.match((await visit(s.redirect, l.slug, { ua: IPHONE_UA })).location, /^https:\/\/apps\.example\/ios\?/);
    t.match((await visit(s.redirect, l.slug, { ua: ANDROID_UA })).location, /^https:\/\/play\.example\/android\?/);
    t.equal((await visit(s.redirect, 'no-such-slug')).status, 404);
  });

  t.test('expiry: expiredUrl or 410, never cached', async (t) => {
    const past = new Date(Date.now() - 1000).toISOString();
    const born = await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/live', expiresAt: past });
    t.equal(born.status, 400, 'a link cannot be created already expired');
    t.equal(born.json.code, 'VALIDATION_ERROR');
    t.same(born.json.data.errors.map((e: { field: string }) => e.field), ['expiresAt'], 'the error names the field');
    // Expired by an update instead (allowed: it is how a link is ended now).
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    const a = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/live', expiresAt: soon, expiredUrl: 'https://example.com/gone' })).json.data;
    const b = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/live', expiresAt: soon })).json.data;
    t.equal((await s.api('PATCH', `/v1/shortlink/links/${a.id}`, { expiresAt: past })).status, 200);
    t.equal((await s.api('PATCH', `/v1/shortlink/links/${b.id}`, { expiresAt: past })).status, 200);
    const ra = await visit(s.redirect, a.slug);
    t.equal(ra.status, 302);
    t.equal(ra.location, 'https://example.com/gone');
    t.equal(ra.cacheControl, 'private, max-age=0');
    const rb = await visit(s.redirect, b.slug);
    t.equal(rb.status, 410);
    const future = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/live', expiresAt: new Date(Date.now() + 3_600_000).toISOString() })).json.data;
    const rf = await visit(s.redirect, future.slug);
    t.equal(rf.status, 302);
    t.equal(rf.location, 'https://example.com/live');
    t.equal(rf.cacheControl, 'private, max-age=0');
    // Expired by an update: the cached link is dropped at once.
    t.equal((await s.api('PATCH', `/v1/shortlink/links/${future.id}`, { expiresAt: past })).status, 200);
    t.equal((await visit(s.redirect, future.slug)).status, 410);
  });

  t.test('maxClicks: exactly N of 200 concurrent visits reach the destination', async (t) => {
    const l = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/limited', maxClicks: 50, expiredUrl: 'https://example.com/sold-out' })).json.data;
    const results = await Promise.all(Array.from({ length: 200 }, () => visit(s.redirect, l.slug)));
    t.equal(results.filter((r) => r.location === 'https://example.com/limited').length, 50);
    t.equal(results.filter((r) => r.location === 'https://example.com/sold-out').length, 150);
    t.ok(results.every((r) => r.status === 302 && r.cacheControl === 'private, max-age=0'));
    const head = await visit(s.redirect, l.slug, { method: 'HEAD' });
    t.equal(head.location, 'https://example.com/sold-out');
    await s.flush();
    t.equal((await s.api('GET', `/v1/shortlink/links/${l.id}`)).json.data.clicksUsed, 50);
    const a = await s.api('GET', `/v1/shortlink/links/${l.id}/analytics`);
    t.equal(a.json.data.total, 50, 'only the redirects to the destination are counted');
  });

  t.test('QR codes in SVG and PNG', async (t) => {
    const l = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/qr' })).json.data;
    const svg = await fetch(`${s.d.api}/v1/shortlink/links/${l.id}/qr?format=svg&size=200&level=H`, { headers: { authorization: `Basic ${s.token}` } });
    t.equal(svg.status, 200);
    t.match(svg.headers.get('content-type'), /image\/svg\+xml/);
    t.match(await svg.text(), /^<svg[^>]*viewBox/);
    const png = await fetch(`${s.d.api}/v1/shortlink/links/${l.id}/qr?format=png&size=128`, { headers: { authorization: `Basic ${s.token}` } });
    t.equal(png.headers.get('content-type'), 'image/png');
    const buf = Buffer.from(await png.arrayBuffer());
    t.same([...buf.subarray(1, 4)], [...Buffer.from('PNG')]);
    t.equal(buf.readUInt32BE(16), 128, 'width as asked');
  });

  t.test('the OpenAPI document lists the short link operations under the beta tag', async (t) => {
    const doc = (await fetch(`${s.d.api}/v1/openapi.json`).then((r) => r.json())) as any;
    for (const p of ['/shortlink/links', '/shortlink/links/{id}', '/shortlink/links/{id}/qr', '/shortlink/links/{id}/analytics', '/shortlink/analytics', '/shortlink/links/{id}/clicks']) {
      t.ok(doc.paths[p], `${p} is documented`);
    }
    t.same(doc.paths['/shortlink/links'].post.tags, ['shortlink']);
    t.equal(doc.tags.find((x: any) => x.name === 'shortlink')['x-maturity'], 'beta');
    t.match(doc.info.description, /SLUG_TAKEN \| 409/);
  });

  t.test('scopes: read-only keys cannot create', async (t) => {
    await s.d.adminCall('POST', '/admin/accounts', { name: `ro${process.pid}` });
    const key = await s.d.adminCall('POST', '/admin/keys', { account: `ro${process.pid}`, scopes: ['shortlink:read'] });
    const r = await fetch(`${s.d.api}/v1/shortlink/links`, { method: 'POST', headers: { authorization: `Basic ${key.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com' }) });
    t.equal(r.status, 403);
  });
});
