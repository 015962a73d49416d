// Two daemons sharing one Postgres and one Redis: a change made through one reaches the other's redirect cache at
// once (pub/sub, not the TTL), and maxClicks stays exact when the visits are split between them. Embedded storage
// is one process by construction (PGlite), so this needs the real services.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { ShortlinkService } from '../../../src/channels/shortlink/shortlink-service.js';
import { startDaemon } from '../../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL, backendLabel } from '../../helpers/env.js';
import { shortlinkDaemon, visit } from './helpers.js';

if (!DATABASE_URL || !REDIS_URL) {
  t.comment('two instances need DATABASE_URL and REDIS_URL (embedded storage is a single process)');
  t.pass('skipped on embedded storage');
} else {
  t.test(`short links on two instances sharing storage (${backendLabel})`, async (t) => {
    // A long TTL: only the invalidation message can make B see a change in time.
    const a = await shortlinkDaemon({ FERRY_SHORTLINK_CACHE_TTL_SECONDS: '3600' });
    t.teardown(() => a.d.stop());
    const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
    const b = await startDaemon(
      {},
      { env: { ...a.d.reuse.env, FERRY_DATA_DIR: dataDir }, store: { url: a.d.reuse.store.url, dataDir, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) } },
    );
    t.teardown(() => b.stop());
    const bRedirect = b.daemon.modules.service<ShortlinkService>('shortlink').redirectAddress;

    t.test('update and delete through A reach B at once', async (t) => {
      const l = (await a.api('POST', '/v1/shortlink/links', { url: 'https://example.com/v1' })).json.data;
      t.equal((await visit(bRedirect, l.slug)).location, 'https://example.com/v1', 'B has it cached now');
      t.equal((await a.api('PATCH', `/v1/shortlink/links/${l.id}`, { url: 'https://example.com/v2' })).status, 200);
      // The publish is awaited by the update; delivery to B's subscriber is a moment later.
      let loc: string | null = null;
      for (let i = 0; i < 100 && loc !== 'https://example.com/v2'; i++) {
        loc = (await visit(bRedirect, l.slug)).location;
        if (loc !== 'https://example.com/v2') await new Promise((r) => setTimeout(r, 10));
      }
      t.equal(loc, 'https://example.com/v2');
      t.equal((await a.api('DELETE', `/v1/shortlink/links/${l.id}`)).status, 200);
      let status = 0;
      for (let i = 0; i < 100 && status !== 404; i++) {
        status = (await visit(bRedirect, l.slug)).status;
        if (status !== 404) await new Promise((r) => setTimeout(r, 10));
      }
      t.equal(status, 404);
    });

    t.test('a slug B looked up before it existed works as soon as A creates it', async (t) => {
      const slug = `later-${process.pid}`;
      t.equal((await visit(bRedirect, slug)).status, 404, 'B caches the miss');
      t.equal((await a.api('POST', '/v1/shortlink/links', { url: 'https://example.com/now', slug })).status, 201);
      let status = 0;
      for (let i = 0; i < 100 && status !== 302; i++) {
        status = (await visit(bRedirect, slug)).status;
        if (status !== 302) await new Promise((r) => setTimeout(r, 10));
      }
      t.equal(status, 302);
    });

    t.test('maxClicks is exact across both instances', async (t) => {
      const l = (await a.api('POST', '/v1/shortlink/links', { url: 'https://example.com/limited', maxClicks: 30 })).json.data;
      const results = await Promise.all(Array.from({ length: 120 }, (_, i) => visit(i % 2 ? bRedirect : a.redirect, l.slug)));
      t.equal(results.filter((r) => r.status === 302 && r.location === 'https://example.com/limited').length, 30);
      t.equal(results.filter((r) => r.status === 410).length, 90);
    });
  });
}
