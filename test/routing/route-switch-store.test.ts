import t from 'tap';
import type { RouteRuleConfig } from '../../src/config/schema.js';
import { createLogger } from '../../src/log.js';
import { RouteSwitchStore } from '../../src/routing/route-switch-store.js';
import { Router, type RouteSwitchEvent } from '../../src/routing/router.js';
import { Scheduler } from '../../src/platform/scheduler.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { waitFor } from '../upstream/upstream-helpers.js';

const RULES: RouteRuleConfig[] = [
  { id: 'uk', match: { prefix: ['44'] }, upstreams: ['a', 'b'] },
  { id: 'us', match: { prefix: ['1'] }, upstreams: ['b', 'c'] },
  { id: 'rest', match: {}, upstreams: ['c'] },
];
const POLL_MS = 40;

/** Starts the store and runs its sync on a scheduler every pollMs, as the SMS module's job does; the result stops both. */
function follow(store: RouteSwitchStore): () => Promise<void> {
  store.start();
  const scheduler = new Scheduler({ lease: { take: async () => true, release: async () => undefined }, log: createLogger('silent') });
  scheduler.add({ name: 'test.route-switches', everyMs: store.pollMs, scope: 'instance', run: () => store.sync() });
  scheduler.start();
  return async () => {
    await scheduler.stop();
    await store.stop();
  };
}

/** A logger that keeps its JSON lines. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

t.test(`route switches are stored and followed by other instances (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const stored = async () => (await db.query<{ value: Record<string, string> }>(`SELECT value FROM settings WHERE key = 'routing.overrides'`)).rows[0]?.value;

  const instance = async (rules = RULES) => {
    const router = new Router(rules);
    const { log, lines } = capturingLogger();
    const store = new RouteSwitchStore(db, router, log, { pollMs: POLL_MS });
    const events: RouteSwitchEvent[] = [];
    router.onSwitch((e) => events.push(e));
    await store.restore();
    const stop = follow(store);
    t.teardown(stop);
    return { router, store, events, lines, stop };
  };

  const a = await instance();
  const b = await instance();

  t.test('a switch on one instance shows up on the other within the poll', async (t) => {
    a.router.switchRoute('uk', 'b', 'admin');
    await a.store.flush();
    t.same(await stored(), { uk: 'b' }, 'stored');
    await waitFor(() => b.router.overrides().uk === 'b', 20 * POLL_MS, 'switch seen by b');
    const seen = b.events.at(-1)!;
    t.equal(seen.origin, 'remote');
    t.equal(seen.to, 'b');
    t.same(b.router.candidates({ destination: '447700900123', accountId: 'x', source: 'S', priority: 0 })!.upstreamIds, ['b', 'a']);
    const logged = a.lines.find((l) => l.msg === 'route switched');
    t.match(logged, { rule: 'uk', from: null, to: 'b', origin: 'admin' }, 'logged with rule, from, to, origin');
    t.match(b.lines.find((l) => l.msg === 'route switched'), { rule: 'uk', to: 'b', origin: 'remote' }, 'the remote apply is logged too');
    // The remote apply is not written back (no ping-pong): b has nothing pending and the row is unchanged.
    await new Promise((r) => setTimeout(r, 3 * POLL_MS));
    t.same(await stored(), { uk: 'b' });
    t.same(a.router.overrides(), { uk: 'b' }, 'a keeps its switch');
  });

  t.test('a clear on the other instance clears it everywhere', async (t) => {
    b.router.clearSwitch('uk', 'cli');
    await b.store.flush();
    t.same(await stored(), {}, 'removed from the stored map');
    await waitFor(() => a.router.overrides().uk === undefined, 20 * POLL_MS, 'clear seen by a');
    t.equal(a.events.at(-1)!.origin, 'remote');
    t.equal(a.events.at(-1)!.to, null);
    t.match(b.lines.find((l) => l.msg === 'route switch cleared'), { rule: 'uk', from: 'b', to: null, origin: 'cli' });
  });

  t.test('simultaneous switches of different rules on different instances both survive', async (t) => {
    a.router.switchRoute('uk', 'b', 'admin');
    b.router.switchRoute('us', 'c', 'admin');
    await Promise.all([a.store.flush(), b.store.flush()]);
    t.same(await stored(), { uk: 'b', us: 'c' });
    await waitFor(() => a.router.overrides().us === 'c' && b.router.overrides().uk === 'b', 20 * POLL_MS, 'both instances converge');
    t.same(a.router.overrides(), { uk: 'b', us: 'c' });
    t.same(b.router.overrides(), { uk: 'b', us: 'c' });
  });

  t.test('rapid local switches are never undone by a poll that read an older row', async (t) => {
    let last = '';
    for (let i = 0; i < 30; i++) {
      last = i % 2 ? 'a' : 'c';
      a.router.switchRoute('uk', last, 'admin');
      t.equal(a.router.overrides().uk, last);
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * POLL_MS)));
      t.equal(a.router.overrides().uk, last, `switch ${i} still in effect`);
    }
    await a.store.flush();
    await waitFor(() => b.router.overrides().uk === last, 20 * POLL_MS, 'b follows the last switch');
    await new Promise((r) => setTimeout(r, 3 * POLL_MS));
    t.equal(a.router.overrides().uk, last);
    t.equal((await stored())!.uk, last);
  });

  t.test('restore after a restart; a stored switch of a rule that no longer exists is ignored', async (t) => {
    await a.stop();
    await b.stop();
    await db.query(`UPDATE settings SET value = value || '{"gone": "x"}'::jsonb WHERE key = 'routing.overrides'`);
    const before = await stored();
    const router = new Router(RULES);
    const events: RouteSwitchEvent[] = [];
    router.onSwitch((e) => events.push(e));
    const { log, lines } = capturingLogger();
    const store = new RouteSwitchStore(db, router, log, { pollMs: POLL_MS });
    const changed = await store.restore();
    t.same(changed.sort(), ['uk', 'us']);
    t.same(router.overrides(), { uk: before!.uk, us: 'c' }, 'switches back after the restart');
    t.ok(events.every((e) => e.origin === 'restore'), 'origin restore');
    t.match(lines.find((l) => l.msg === 'route switches restored'), { rules: ['uk', 'us'] });
    const stop = follow(store);
    await new Promise((r) => setTimeout(r, 4 * POLL_MS));
    t.same(await stored(), before, 'restoring writes nothing back');
    t.same(router.overrides(), { uk: before!.uk, us: 'c' }, 'polling keeps them');
    await stop();
  });

  t.test('no stored row: restore changes nothing', async (t) => {
    await db.query(`DELETE FROM settings WHERE key = 'routing.overrides'`);
    const router = new Router(RULES);
    const store = new RouteSwitchStore(db, router, createLogger('silent'));
    t.same(await store.restore(), []);
    t.same(router.overrides(), {});
  });
});
