// 1,000 concurrent sessions through Africa's Talking callbacks over real HTTP (every one live at once, each walked to
// its end with its own input, each transcript its own), and two daemons sharing Postgres and Redis: hops of one session alternate
// between instances, and two hops of one session sent to both at once are serialised.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startDaemon } from '../../helpers/daemon.js';
import { backendLabel, DATABASE_URL } from '../../helpers/env.js';
import { atHop, BANK_TREE, customer, publishedMenu } from './ussd-helpers.js';

// About 10 s on a quiet machine; a generous bound for a shared, loaded one (like the fault tests).
t.setTimeout(300_000);

/** Runs fn over items with at most `width` in flight. */
async function pool<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

t.test(`1,000 concurrent USSD sessions (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384*12#', menuId: await publishedMenu(acme.api, BANK_TREE) });
  const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
  const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
  const n = 1000;
  const ids = Array.from({ length: n }, (_, i) => i);
  const hop = (i: number, text: string) => atHop(d, path, { sessionId: `load-${i}`, serviceCode: '*384*12#', phoneNumber: `2332400${String(i).padStart(5, '0')}`, networkCode: '62001', text });
  // The first hop pre-fills the menu choice (Africa's Talking's text '2'): every session opens at the amount prompt.
  const first = await pool(ids, 64, (i) => hop(i, '2'));
  t.equal(first.filter((r) => r.text === 'CON Enter amount').length, n, 'every session open at the amount prompt, all live at once');
  const second = await pool(ids, 64, (i) => hop(i, `2*${i + 1}`));
  t.equal(second.filter((r, i) => r.text === `END You sent ${i + 1} GHS`).length, n, 'each session ended with its own amount');
  const { rows } = await d.daemon.db.query<{ n: number; hops: number }>(
    `SELECT count(*)::int AS n, min(hops)::int AS hops FROM ussd_sessions WHERE channel = 'africastalking' AND end_status = 'Success' AND jsonb_array_length(transcript) = 4`,
  );
  t.same(rows[0], { n, hops: 2 }, 'every session stored with its 2 hops and 4-entry transcript');
});

t.test(`two instances sharing storage (${backendLabel})`, { skip: DATABASE_URL ? false : 'the embedded database belongs to one process: two instances need Postgres' }, async (t) => {
  const secret = randomBytes(32).toString('base64');
  const a = await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret });
  t.teardown(() => a.stop());
  const b = await startDaemon({ FERRY_DATA_DIR: mkdtempSync(join(tmpdir(), 'ferry-ussd-b-')) }, a.reuse);
  t.teardown(() => b.stopKeepingStore());
  const acme = await customer(a, 'acme');
  await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384*12#', menuId: await publishedMenu(acme.api, BANK_TREE) });
  const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
  const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
  const base = { serviceCode: '*384*12#', phoneNumber: '233240000001', networkCode: '62001' };

  t.equal((await atHop(a, path, { ...base, sessionId: 'x1', text: '' })).text.split('\n')[0], 'CON Ferry Bank', 'first hop on instance A');
  t.equal((await atHop(b, path, { ...base, sessionId: 'x1', text: '2' })).text, 'CON Enter amount', 'second hop on instance B');
  t.equal((await atHop(a, path, { ...base, sessionId: 'x1', text: '2*7' })).text, 'END You sent 7 GHS', 'third on A again');

  // Two inputs of one session at both instances at once: both applied, one after the other, never lost or mixed.
  await atHop(a, path, { ...base, sessionId: 'x2', text: '' });
  await atHop(a, path, { ...base, sessionId: 'x2', text: '2' });
  const both = await Promise.all([atHop(a, path, { ...base, sessionId: 'x2', text: '2*abc' }), atHop(b, path, { ...base, sessionId: 'x2', text: '2*abc*9' })]);
  // In either order the same two screens: 'abc' first is refused and 9 ends it; 9 first ends it and the late 'abc'
  // (Africa's Talking repeats every input in text) opens a new session pre-filled with 2, abc.
  t.same(both.map((r) => r.text).sort(), ['CON Digits only\nEnter amount', 'END You sent 9 GHS'], 'serialised, nothing lost or mixed');
  const rows = (await a.daemon.db.query<{ hops: number; transcript: unknown[] }>(`SELECT hops, transcript FROM ussd_sessions WHERE network_key LIKE '%:x2'`)).rows;
  for (const r of rows) t.equal(r.transcript.length, r.hops * 2, 'every hop has its input and its screen in the transcript');
});
