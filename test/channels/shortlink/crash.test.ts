// A crash loses at most the clicks of one batch window: clicks older than shortlink.clickBatchMs are in storage. The
// daemon runs as a child process, killed with SIGKILL (no shutdown, no flush), then its storage is opened again.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { ShortlinkService } from '../../../src/channels/shortlink/shortlink-service.js';
import { call, startDaemon, startDaemonProcess, testEnv } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { visit } from './helpers.js';

const BATCH_MS = 200;

t.test(`a killed daemon has written every click older than one batch window (${backendLabel})`, async (t) => {
  const { env, store } = await testEnv({ FERRY_SHORTLINK_CLICK_BATCH_MS: String(BATCH_MS) });
  const child = await startDaemonProcess(env);
  t.teardown(() => child.child.kill('SIGKILL'));
  const listening = child.output.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => l.msg === 'short link redirects listening');
  t.ok(listening, 'the redirect listener logs its address');
  const token = readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim();
  const admin = (path: string, body: unknown) => call(child.admin, 'POST', path, { body, headers: { authorization: `Bearer ${token}` } });
  const account = (await admin('/admin/accounts', { name: 'crash' })).json.data;
  const key = (await admin('/admin/keys', { account: 'crash', scopes: 'all' })).json.data;
  const link = (await call(child.api, 'POST', '/v1/shortlink/links', { token: key.token, body: { url: 'https://example.com/c', maxClicks: 1000 } })).json.data;

  for (let i = 0; i < 25; i++) t.equal((await visit(listening.address, link.slug)).status, 302);
  // Five batch windows: the batch timer has fired and its transaction committed.
  await new Promise((r) => setTimeout(r, 5 * BATCH_MS));
  child.child.kill('SIGKILL');
  const gone = await child.exited;
  t.equal(gone.signal, 'SIGKILL');

  const d = await startDaemon({}, { env, store });
  t.teardown(() => d.stop());
  const service = d.daemon.modules.service<ShortlinkService>('shortlink');
  t.equal((await service.clicks(account.id, link.id, undefined, 100)).length, 25, 'every click is stored');
  const a = await service.analytics(account.id, { linkId: link.id, groupBy: 'time', interval: 'hour', from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 60_000), includeBots: false });
  t.equal(a.total, 25, 'and counted in the rollups');
  t.equal((await service.store.bySlug(link.slug))!.usedClicks, 25, 'the click limit counter survived too');
});
