// Chat real time across instances. Two Ferry daemons sharing Postgres and Redis with the users on different instances
// (the Redis adapter carries messages, typing, read marks, joins and revocations; presence is in Redis; a process
// without the realtime role forwards what it publishes), and, on both backends, an instance killed mid-conversation:
// after the clients reconnect, retry their unacknowledged sends with the same clientMsgId and resync by seq, nothing
// is lost and nothing doubled.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { io, type Socket } from 'socket.io-client';
import type { ChatMessage } from '../../../src/channels/chat/chat-types.js';
import { accountWithKey, call, startDaemon, startDaemonProcess, testEnv, type DaemonProcess, type TestDaemon } from '../../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL, backendLabel } from '../../helpers/env.js';
import { until, waitFor } from '../../helpers/wait.js';

t.setTimeout(300_000);

const clustered = Boolean(DATABASE_URL && REDIS_URL);
/** Instances of one deployment share the secret key (user tokens are signed with keys derived from it). */
const secret = () => ({ FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('base64') });

interface Client {
  socket: Socket;
  got: Array<{ event: string; payload: any }>;
  of(event: string): any[];
  ack(event: string, payload: unknown, timeoutMs?: number): Promise<any>;
}

async function connect(api: string, token: string): Promise<Client> {
  const socket = io(api + '/chat-sdk', { auth: { token }, transports: ['websocket'], reconnection: false, forceNew: true });
  const got: Client['got'] = [];
  socket.onAny((event: string, payload: unknown) => got.push({ event, payload }));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return {
    socket,
    got,
    of: (event) => got.filter((g) => g.event === event).map((g) => g.payload),
    ack: (event, payload, timeoutMs = 15_000) => socket.timeout(timeoutMs).emitWithAck(event, payload),
  };
}

const messagesIn = (c: Client, channelId: string): ChatMessage[] => c.of('message.new').filter((p) => p.channelId === channelId).map((p) => p.message);

/** A REST caller with the key on one instance. */
function restOn(api: string, key: string) {
  return async (method: string, path: string, body?: unknown) => {
    const r = await call(api, method, `/v1/chat-sdk${path}`, { token: key, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.json.data;
  };
}

/** A second daemon on the first one's database and Redis prefix, with its own data folder. */
async function sibling(first: TestDaemon, extra: Record<string, string> = {}): Promise<TestDaemon> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  return startDaemon(extra, {
    env: { ...first.reuse.env, FERRY_DATA_DIR: dataDir },
    store: { url: first.reuse.store.url, dataDir, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) },
  });
}

if (!clustered) {
  t.test('two instances sharing Postgres and Redis', { skip: 'two instances need DATABASE_URL and REDIS_URL (embedded storage is a single process)' }, async () => {});
} else {
  t.test(`two instances sharing Postgres and Redis, the users on different instances (${backendLabel})`, async (t) => {
    const a = await startDaemon(secret());
    t.teardown(() => a.stop());
    const b = await sibling(a);
    t.teardown(() => b.stop());
    // The API without the realtime role: what it publishes reaches the sockets through the realtime instances.
    const apiOnly = await sibling(a, { FERRY_ROLE: 'api' });
    t.teardown(() => apiOnly.stop());
    const { token: key } = await accountWithKey(a, 'chat-two', 'chat:manage');
    const restA = restOn(a.api, key);
    const restB = restOn(b.api, key);
    const restApi = restOn(apiOnly.api, key);
    const mint = async (userId: string) => (await restA('POST', '/users/token', { userId })).token as string;
    const clients: Client[] = [];
    t.teardown(() => clients.forEach((c) => c.socket.close()));
    const on = async (api: string, userId: string) => {
      const c = await connect(api, await mint(userId));
      clients.push(c);
      return c;
    };
    await restA('POST', '/channels', { type: 'messaging', id: 'two-1', members: ['alice', 'bob'] });
    const alice = await on(a.api, 'alice');
    const bob = await on(b.api, 'bob');

    await t.test('messages, typing and read cross instances', async (t) => {
      const m1 = await alice.ack('message.send', { channelId: 'two-1', text: 'from A', clientMsgId: 'x-1' });
      t.match(m1, { ok: true, message: { seq: 1 } });
      await waitFor(() => messagesIn(bob, 'two-1').length === 1, 10_000, 'bob on B gets it');
      t.same(messagesIn(bob, 'two-1')[0], m1.message);
      const m2 = await bob.ack('message.send', { channelId: 'two-1', text: 'from B', clientMsgId: 'x-2' });
      t.equal(m2.message.seq, 2, 'one sequence for the channel whichever instance stores');
      await waitFor(() => messagesIn(alice, 'two-1').length === 2, 10_000, 'alice on A gets it');
      t.same(
        messagesIn(alice, 'two-1').map((m) => m.seq),
        [1, 2],
      );
      await bob.ack('typing.start', { channelId: 'two-1' });
      await waitFor(() => alice.of('typing.start').length === 1, 10_000, 'typing across');
      t.same(alice.of('typing.start')[0], { channelId: 'two-1', userId: 'bob' });
      await alice.ack('read', { channelId: 'two-1', seq: 2 });
      await waitFor(() => bob.of('read').length === 1, 10_000, 'read across');
      t.same(bob.of('read')[0], { channelId: 'two-1', userId: 'alice', lastReadSeq: 2 });
      t.same((await alice.ack('presence.get', { userIds: ['bob'] })).presence, [{ userId: 'bob', online: true }], "presence of a user on the other instance");
    });

    await t.test('an instance without the realtime role forwards to the realtime ones: each socket gets it once', async (t) => {
      const sent = await restApi('POST', '/channels/two-1/messages', { userId: 'alice', text: 'through the API process' });
      await waitFor(() => messagesIn(bob, 'two-1').some((m) => m.id === sent.id) && messagesIn(alice, 'two-1').some((m) => m.id === sent.id), 10_000, 'both get it');
      const marker = await alice.ack('message.send', { channelId: 'two-1', text: 'marker', clientMsgId: 'x-3' });
      await waitFor(() => messagesIn(bob, 'two-1').some((m) => m.id === marker.message.id), 10_000, 'the marker');
      t.equal(messagesIn(bob, 'two-1').filter((m) => m.id === sent.id).length, 1, 'bob once');
      t.equal(messagesIn(alice, 'two-1').filter((m) => m.id === sent.id).length, 1, 'alice once');
      const res = await call(apiOnly.api, 'GET', '/socket.io/?EIO=4&transport=polling');
      t.not(res.status, 200, 'no sockets on the process without the realtime role');
    });

    await t.test('a member added on one instance joins live sockets on the other; a revocation closes them there', async (t) => {
      const carol = await on(a.api, 'carol');
      await restB('POST', '/channels/two-1/members', { userIds: ['carol'] });
      await waitFor(() => carol.of('member.added').length === 1, 10_000, 'member.added at carol on A');
      const m = await bob.ack('message.send', { channelId: 'two-1', text: 'welcome carol', clientMsgId: 'x-4' });
      await waitFor(() => messagesIn(carol, 'two-1').some((x) => x.id === m.message.id), 10_000, 'carol gets messages without reconnecting');
      const closed = new Promise<string>((resolve) => bob.socket.once('disconnect', (r) => resolve(r)));
      await restA('POST', '/users/bob/revoke-tokens');
      t.equal(await closed, 'io server disconnect', "bob's socket on B is closed by a revocation through A");
      t.same(bob.of('revoked'), [{ reason: 'revoked' }]);
      await until(
        async () => (await alice.ack('presence.get', { userIds: ['bob'] })).presence[0].online,
        (online) => online === false,
        10_000,
      );
      t.pass('bob is offline everywhere');
    });
  });
}

t.test(`an instance killed mid-conversation: nothing lost or doubled after resync (${backendLabel})`, async (t) => {
  const { env, store } = await testEnv({ ...secret(), FERRY_CHAT_PRESENCE_TTL_SECONDS: '5', FERRY_CHAT_MESSAGES_PER_SECOND: '1000' });
  // Clustered: alice on A (in this process), bob on B (a child process, killed). Embedded: both on the child, and
  // the storage reopened by a new instance after the kill.
  let survivor: TestDaemon | null = clustered ? await startDaemon({}, { env, store }) : null;
  t.teardown(async () => {
    if (survivor) await survivor.stop();
    else await store.cleanup();
  });
  const childDir = clustered ? mkdtempSync(join(tmpdir(), 'ferry-test-')) : store.dataDir;
  if (clustered) t.teardown(() => rmSync(childDir, { recursive: true, force: true }));
  const child: DaemonProcess = await startDaemonProcess({ ...env, FERRY_DATA_DIR: childDir });
  t.teardown(() => {
    if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
  });

  let key: string;
  if (survivor) key = (await accountWithKey(survivor, 'chat-kill', 'chat:manage')).token;
  else {
    const headers = { authorization: `Bearer ${readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim()}` };
    await call(child.admin, 'POST', '/admin/accounts', { body: { name: 'chat-kill' }, headers });
    key = (await call(child.admin, 'POST', '/admin/keys', { body: { account: 'chat-kill', scopes: 'chat:manage' }, headers })).json.data.token;
  }
  const frontApi = survivor?.api ?? child.api;
  const rest = restOn(frontApi, key);
  const tokenOf = { alice: (await rest('POST', '/users/token', { userId: 'alice' })).token, bob: (await rest('POST', '/users/token', { userId: 'bob' })).token };
  await rest('POST', '/channels', { type: 'messaging', id: 'kill-1', members: ['alice', 'bob'] });
  let alice = await connect(frontApi, tokenOf.alice);
  let bob = await connect(child.api, tokenOf.bob);
  const sockets = () => [alice, bob].forEach((c) => c.socket.close());
  t.teardown(sockets);

  const acked = new Map<string, ChatMessage>();
  const send = async (i: number, timeoutMs = 5000) => {
    try {
      const r = await alice.ack('message.send', { channelId: 'kill-1', text: `m${i}`, clientMsgId: `k-${i}` }, timeoutMs);
      if (r.ok) acked.set(`k-${i}`, r.message);
    } catch {
      // No ack (the instance died): retried below with the same clientMsgId.
    }
  };
  let next = 0;
  const batch = () => Promise.all([next++, next++, next++].map((i) => send(i)));
  for (let round = 0; round < 100 && messagesIn(bob, 'kill-1').length < 15; round++) await batch();
  t.ok(messagesIn(bob, 'kill-1').length >= 15, 'bob received the first part live');
  // The kill lands while sends are under way.
  const inFlight = batch();
  child.child.kill('SIGKILL');
  t.equal((await child.exited).signal, 'SIGKILL', 'the instance was killed mid-conversation');
  await inFlight;

  if (!survivor) {
    // The storage comes back under a new instance; the clients reconnect to it.
    survivor = await startDaemon({}, { env, store });
    alice.socket.close();
    alice = await connect(survivor.api, tokenOf.alice);
  } else {
    // An instance that dies takes its users offline within the presence TTL.
    await until(
      async () => (await alice.ack('presence.get', { userIds: ['bob'] })).presence[0].online,
      (online) => online === false,
      30_000,
    );
    t.pass("bob, whose instance died, is offline within the presence TTL");
  }
  const beforeRetry = acked.size;
  const retried: boolean[] = [];
  for (let i = 0; i < next; i++) {
    if (acked.has(`k-${i}`)) continue;
    const r = await alice.ack('message.send', { channelId: 'kill-1', text: `m${i}`, clientMsgId: `k-${i}` });
    t.equal(r.ok, true, `retry of k-${i}`);
    acked.set(`k-${i}`, r.message);
    retried.push(r.created);
  }
  t.comment(`${beforeRetry} acked before the retries; ${retried.length} retried (${retried.filter((c) => !c).length} had been stored before the kill)`);
  for (let i = 0; i < 10; i++) await send(next++, 15_000);
  t.equal(acked.size, next, 'every send acknowledged in the end');

  // bob comes back to a live instance and resyncs from the last seq it saw without a gap.
  const seen = messagesIn(bob, 'kill-1');
  t.equal(new Set(seen.map((m) => m.id)).size, seen.length, 'nothing doubled live');
  const seqs = new Set(seen.map((m) => m.seq));
  let lastSeq = 0;
  while (seqs.has(lastSeq + 1)) lastSeq++;
  bob.socket.close();
  bob = await connect(survivor.api, tokenOf.bob);
  const synced: ChatMessage[] = [];
  for (let after = lastSeq, more = true, pages = 0; more && pages < 20; pages++) {
    const page = await bob.ack('messages.sync', { channelId: 'kill-1', afterSeq: after, limit: 7 });
    t.equal(page.ok, true);
    synced.push(...page.messages);
    after = page.messages.at(-1)?.seq ?? after;
    more = page.hasMore;
  }
  const view = new Map<string, ChatMessage>();
  for (const m of [...seen.filter((m) => m.seq <= lastSeq), ...synced]) view.set(m.id, m);
  t.equal(view.size, seen.filter((m) => m.seq <= lastSeq).length + synced.length, 'the resync starts where the live view ended: no overlap');
  t.same(
    [...view.values()].map((m) => m.seq),
    Array.from({ length: next }, (_, i) => i + 1),
    "bob's view: every seq once, in order",
  );
  t.same(
    [...view.values()].map((m) => m.clientMsgId).sort(),
    [...acked.keys()].sort(),
    'exactly the messages alice had acknowledged, none twice',
  );
  t.ok(
    [...view.values()].every((m) => m.id === acked.get(m.clientMsgId!)?.id),
    'each the very message its ack carried',
  );
});
