import t from 'tap';
import type { ShortlinkService } from '../../../src/channels/shortlink/shortlink-service.js';
import { call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { waitFor } from '../../helpers/wait.js';
import { BROWSER_UA, IPHONE_UA, shortlinkDaemon, visit } from './helpers.js';

// Public addresses from MaxMind's GeoLite2 test data and a well-known resolver: GB and US in the shipped database.
const GB = '81.2.69.142';
const US = '8.8.8.8';
const BATCH_MS = 100;

t.test(`short link clicks: recorded in batches, bots and HEAD apart, geo from trusted proxies, analytics, events (${backendLabel})`, async (t) => {
  const s = await shortlinkDaemon(
    { FERRY_SHORTLINK_TRUSTED_PROXIES: '127.0.0.1/32', FERRY_SHORTLINK_CLICK_BATCH_MS: String(BATCH_MS), FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' },
    'all',
  );
  t.teardown(() => s.d.stop());
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  const wh = await call(s.d.api, 'POST', '/v1/webhooks', { token: s.token, body: { url: rx.url, events: ['shortlink.click'] } });
  t.equal(wh.status, 200, wh.text);

  const link = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/landing' })).json.data;
  const other = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/other' })).json.data;
  const xff = (v: string) => ({ 'x-forwarded-for': v });

  // Three humans: GB desktop with a referrer, US iPhone, and GB again behind a client that forged a first hop.
  t.equal((await visit(s.redirect, link.slug, { headers: { ...xff(GB), referer: 'https://news.example/story?id=1' } })).status, 302);
  await visit(s.redirect, link.slug, { ua: IPHONE_UA, headers: xff(US) });
  await visit(s.redirect, link.slug, { headers: xff(`${US}, ${GB}`) });
  // Not human: a HEAD, a link preview, headless Chrome and a client with no user agent.
  const head = await visit(s.redirect, link.slug, { method: 'HEAD', headers: xff(GB) });
  t.equal(head.status, 302);
  t.equal(head.location, 'https://example.com/landing');
  await visit(s.redirect, link.slug, { ua: 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)', headers: xff(GB) });
  await visit(s.redirect, link.slug, { ua: BROWSER_UA.replace('Chrome/', 'HeadlessChrome/'), headers: xff(GB) });
  await visit(s.redirect, link.slug, { ua: null, headers: xff(GB) });
  await visit(s.redirect, other.slug, { headers: xff(US) });

  t.test('clicks reach storage within the batch window without being asked to', async (t) => {
    await waitFor(() => rx.received.length >= 7, 20 * BATCH_MS + 5000, 'shortlink.click events');
    const raw = await s.api('GET', `/v1/shortlink/links/${link.id}/clicks?limit=5`);
    t.equal(raw.status, 200, raw.text);
    t.equal(raw.json.data.clicks.length, 5);
    const rest = await s.api('GET', `/v1/shortlink/links/${link.id}/clicks?limit=5&cursor=${raw.json.data.nextCursor}`);
    const all = [...raw.json.data.clicks, ...rest.json.data.clicks].reverse();
    t.equal(all.length, 7, 'every request is in the raw log, HEAD included');
    t.same(
      all.map((c: any) => [c.method, c.bot, c.country, c.device]),
      [
        ['GET', false, 'GB', 'desktop'],
        ['GET', false, 'US', 'mobile'],
        ['GET', false, 'GB', 'desktop'],
        ['HEAD', false, 'GB', 'desktop'],
        ['GET', true, 'GB', 'desktop'],
        ['GET', true, 'GB', 'desktop'],
        ['GET', true, 'GB', 'desktop'],
      ],
    );
    t.equal(all[0].referrer, 'news.example');
    t.equal(all[1].os, 'iOS');
    t.equal(all[0].browser, 'Chrome');
    // Partitioned by time (migration 0054): the daemon made partitions ahead, so no click waits in the default one.
    const homes = await s.d.daemon.db.query<{ p: string }>(`SELECT DISTINCT tableoid::regclass::text AS p FROM shortlink_clicks WHERE link_id = $1`, [link.id]);
    t.ok(homes.rows.length >= 1, 'the clicks are somewhere');
    for (const r of homes.rows) t.match(r.p, /^shortlink_clicks_p(_before|\d{8})$/, `in a range partition (${r.p}), not the default one`);
  });

  t.test('analytics: humans only by default, grouped by each dimension and by time', async (t) => {
    const a = async (qs: string) => (await s.api('GET', `/v1/shortlink/links/${link.id}/analytics?${qs}`)).json.data;
    t.equal((await a('groupBy=time')).total, 3);
    t.same((await a('groupBy=country')).groups, [{ key: 'GB', clicks: 2 }, { key: 'US', clicks: 1 }]);
    t.same((await a('groupBy=device')).groups, [{ key: 'desktop', clicks: 2 }, { key: 'mobile', clicks: 1 }]);
    t.same((await a('groupBy=os')).groups.map((g: any) => g.key).sort(), ['Linux', 'iOS'].sort());
    t.same((await a('groupBy=referrer')).groups, [{ key: '', clicks: 2 }, { key: 'news.example', clicks: 1 }]);
    const hourly = await a('groupBy=time&interval=hour');
    t.equal(hourly.groups.length, 1);
    t.equal(hourly.groups[0].clicks, 3);
    t.match(hourly.groups[0].key, /T\d\d:00:00\.000Z$/);
    const daily = await a('groupBy=time&interval=day');
    t.match(daily.groups[0].key, /T00:00:00\.000Z$/);
    const withBots = await a('groupBy=country&includeBots=true');
    t.equal(withBots.total, 6, 'three bots, the HEAD still not counted');
    const account = (await s.api('GET', '/v1/shortlink/analytics?groupBy=country')).json.data;
    t.equal(account.total, 4);
    t.same(account.groups, [{ key: 'GB', clicks: 2 }, { key: 'US', clicks: 2 }]);
    const empty = (await s.api('GET', `/v1/shortlink/links/${link.id}/analytics?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z`)).json.data;
    t.equal(empty.total, 0);
    const bad = await s.api('GET', `/v1/shortlink/links/${link.id}/analytics?groupBy=shoe`);
    t.equal(bad.json.code, 'VALIDATION_ERROR');
  });

  t.test('shortlink.click through the webhook outbox: one per GET, bots marked, never a HEAD', async (t) => {
    const events = rx.received.map((r) => r.json).filter((e) => e.type === 'shortlink.click');
    const mine = events.filter((e) => e.data.linkId === link.id);
    t.equal(mine.length, 6);
    t.equal(mine.filter((e) => e.data.bot).length, 3);
    t.match(mine.find((e) => !e.data.bot && e.data.country === 'US').data, { slug: link.slug, outcome: 'redirected', device: 'mobile', os: 'iOS' });
    t.ok(mine.every((e) => !('ip' in e.data)), 'no client address in the event');
  });

  t.test('X-Forwarded-For is ignored from a peer that is not a trusted proxy', async (t) => {
    const plain = await shortlinkDaemon({ FERRY_SHORTLINK_CLICK_BATCH_MS: String(BATCH_MS) });
    t.teardown(() => plain.d.stop());
    const l = (await plain.api('POST', '/v1/shortlink/links', { url: 'https://example.com/x' })).json.data;
    await visit(plain.redirect, l.slug, { headers: xff(GB) });
    await plain.flush();
    const c = (await plain.api('GET', `/v1/shortlink/links/${l.id}/clicks`)).json.data.clicks;
    t.equal(c.length, 1);
    t.equal(c[0].country, null, 'loopback has no country; the forged header is not believed');
  });

  t.test('a graceful stop writes the clicks still in memory', async (t) => {
    const d2 = await shortlinkDaemon({ FERRY_SHORTLINK_CLICK_BATCH_MS: '60000' });
    const l = (await d2.api('POST', '/v1/shortlink/links', { url: 'https://example.com/y' })).json.data;
    for (let i = 0; i < 3; i++) await visit(d2.redirect, l.slug);
    await d2.d.stopKeepingStore();
    const again = await startDaemon({}, d2.d.reuse);
    t.teardown(() => again.stop());
    const service = again.daemon.modules.service<ShortlinkService>('shortlink');
    const raw = await service.clicks(d2.accountId, l.id, undefined, 10);
    t.equal(raw.length, 3);
    const { total } = await service.analytics(d2.accountId, { linkId: l.id, groupBy: 'time', interval: 'hour', from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 60_000), includeBots: false });
    t.equal(total, 3);
  });
});
