// Pushes to offline chat members through the push product and its embedded FCM simulator, on both backends: an
// offline member with a device gets one (title, body, data), a member with a live socket does not, a muted member does
// not, the sender does not, skipPush is honoured, one push per member per channel per collapse window, and a member
// whose last socket closed is pushed again; the fast path deletes its outbox rows; and a push whose process crashed
// right after the commit is made by the outbox job of the next daemon on the same storage, exactly once.
import t from 'tap';
import { io, type Socket } from 'socket.io-client';
import type { ChatModuleService } from '../../../src/channels/chat/index.js';
import { LocalCollapse, PUSH_BODY_CHARS, truncate } from '../../../src/channels/chat/realtime/offline-push.js';
import type { PushModuleService } from '../../../src/channels/push/index.js';
import { accountWithKey, call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';

t.setTimeout(240_000);

t.test('truncate and the in-process collapse', async (t) => {
  t.equal(truncate('short', 10), 'short');
  const long = '🙂'.repeat(PUSH_BODY_CHARS + 5);
  const cut = truncate(long, PUSH_BODY_CHARS);
  t.equal(Array.from(cut).length, PUSH_BODY_CHARS, 'counted in code points, never splitting one');
  t.ok(cut.endsWith('…'));
  let now = 1000;
  const c = new LocalCollapse(() => now);
  t.equal(await c.claim('k', 5000), true);
  t.equal(await c.claim('k', 5000), false, 'within the window');
  t.equal(await c.claim('other', 5000), true, 'another member or channel');
  now += 5000;
  t.equal(await c.claim('k', 5000), true, 'after the window');
  t.equal(await c.claim('m', 5000, 'msg_a'), true);
  t.equal(await c.claim('m', 5000, 'msg_a'), true, 'the same message evaluated again (the outbox job) keeps its window');
  t.equal(await c.claim('m', 5000, 'msg_b'), false, 'another message within it does not');
});

t.test(`offline members get a push (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_PUSH_SIMULATOR: 'on', FERRY_CHAT_PUSH_COLLAPSE_SECONDS: '600' });
  t.teardown(() => d.stop());
  const { token: key } = await accountWithKey(d, 'chat-push', ['chat:manage', 'push:manage', 'push:send']);
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await call(d.api, method, path, { token: key, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.json.data;
  };
  const fcm = d.daemon.modules.service<PushModuleService>('push').simulators!.fcm;
  const chat = d.daemon.modules.service<ChatModuleService>('chat');
  const sockets: Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.close()));
  const connect = async (userId: string) => {
    const { token } = await api('POST', '/v1/chat-sdk/users/token', { userId });
    const s = io(d.api + '/chat-sdk', { auth: { token }, transports: ['websocket'], reconnection: false, forceNew: true });
    sockets.push(s);
    await new Promise<void>((resolve, reject) => {
      s.once('connect', () => resolve());
      s.once('connect_error', reject);
    });
    return s;
  };
  /** Users a push was made for (push's own record of sends to a user), in order. */
  const pushedUsers = async () => {
    await chat.realtime.pushesSettled();
    return (await d.daemon.db.query<{ target: string }>(`SELECT target FROM push_sends WHERE target_kind = 'user' ORDER BY id`)).rows.map((r) => r.target);
  };
  const atSimulator = (userId: string) => until(() => fcm.received().filter((r) => r.token === `fcm-${userId}`), (got) => got.length > 0, 30_000);

  const app = await api('POST', '/v1/push/apps', { name: 'Chat app' });
  for (const userId of ['alice', 'bob', 'carol', 'dave', 'erin']) {
    await api('POST', '/v1/chat-sdk/users/token', { userId, name: userId[0].toUpperCase() + userId.slice(1) });
    await api('POST', '/v1/push/devices', { appId: app.id, token: `fcm-${userId}`, platform: 'android', userId });
  }
  await api('POST', '/v1/chat-sdk/channels', { type: 'messaging', id: 'team', name: 'Team', members: ['alice', 'bob', 'carol', 'dave'] });
  await api('PATCH', '/v1/chat-sdk/channels/team/members/dave', { muted: true });
  await api('POST', '/v1/chat-sdk/channels', { type: 'messaging', id: 'quiet', members: ['alice', 'erin'] });

  await t.test('skipPush is honoured; the sender is never pushed, even offline with a device', async (t) => {
    await api('POST', '/v1/chat-sdk/channels/quiet/messages', { userId: 'alice', text: 'shh', skipPush: true });
    t.same(await pushedUsers(), [], 'no push for a skipPush message');
    const m = await api('POST', '/v1/chat-sdk/channels/quiet/messages', { userId: 'alice', text: 'hello erin' });
    t.same(await pushedUsers(), ['erin'], 'erin, not alice');
    const [got] = await atSimulator('erin');
    t.match(got.message, {
      notification: { title: 'Alice', body: 'hello erin' },
      data: { type: 'chat.message.new', channelId: 'quiet', messageId: m.id, seq: String(m.seq) },
    }, "no channel name: the sender's name is the title");
    t.equal(fcm.received().filter((r) => r.token === 'fcm-alice').length, 0);
  });

  await t.test('an offline member is pushed; online, muted and the sender are not; one per collapse window', async (t) => {
    const alice = await connect('alice');
    const carol = await connect('carol');
    const ack = await alice.timeout(15_000).emitWithAck('message.send', { channelId: 'team', text: 'hello team', clientMsgId: 'p-1' });
    t.equal(ack.ok, true, JSON.stringify(ack));
    t.same(await pushedUsers(), ['erin', 'bob'], 'only bob: carol has a socket, dave muted the channel, alice sent it');
    const [got] = await atSimulator('bob');
    t.match(got.message, { notification: { title: 'Team', body: 'hello team' }, data: { channelId: 'team', messageId: ack.message.id, seq: '1' } });
    await alice.timeout(15_000).emitWithAck('message.send', { channelId: 'team', text: 'again', clientMsgId: 'p-2' });
    t.same(await pushedUsers(), ['erin', 'bob'], 'collapsed: bob was pushed for this channel within the window');

    carol.close();
    await until(
      async () => (await alice.timeout(15_000).emitWithAck('presence.get', { userIds: ['carol'] })).presence[0].online,
      (online) => online === false,
      15_000,
    );
    await alice.timeout(15_000).emitWithAck('message.send', { channelId: 'team', text: 'carol, you left', clientMsgId: 'p-3' });
    t.same(await pushedUsers(), ['erin', 'bob', 'carol'], 'carol, offline now, is pushed');
    const [toCarol] = await atSimulator('carol');
    t.match(toCarol.message, { notification: { body: 'carol, you left' }, data: { seq: '3' } });
    t.equal(fcm.received().filter((r) => r.token === 'fcm-dave').length, 0, 'the muted member never');
    t.equal(fcm.received().filter((r) => r.token === 'fcm-bob').length, 1, 'bob once');
  });

  await t.test('a member with no device is not an error', async (t) => {
    await api('POST', '/v1/chat-sdk/channels', { type: 'messaging', id: 'nodevice', members: ['alice', 'frank'] });
    await api('POST', '/v1/chat-sdk/channels/nodevice/messages', { userId: 'alice', text: 'anyone?' });
    t.same((await pushedUsers()).filter((u) => u === 'frank'), [], 'nothing recorded for frank');
    const metrics = await d.daemon.metrics.registry.getSingleMetricAsString('ferry_chat_offline_pushes_total');
    t.match(metrics, /outcome="no_device"} 1/, 'counted as no device');
    t.notMatch(metrics, /outcome="failed"/, 'no failure');
  });

  await t.test('the fast path leaves no outbox row behind', async (t) => {
    await chat.realtime.pushesSettled();
    const { rows } = await d.daemon.db.query<{ n: number | string }>(`SELECT count(*) AS n FROM chat_push_outbox`);
    t.equal(Number(rows[0].n), 0, 'every evaluated message had its row deleted');
  });
});

t.test(`a push lost to a crash after the commit is made by the next daemon's outbox job, once (${backendLabel})`, async (t) => {
  const first = await startDaemon({ FERRY_PUSH_SIMULATOR: 'on', FERRY_CHAT_PUSH_COLLAPSE_SECONDS: '600' });
  let live: TestDaemon | null = first;
  t.teardown(async () => (live ? live.stop() : first.reuse.store.cleanup()));
  const { token: key } = await accountWithKey(first, 'chat-crash', ['chat:manage', 'push:manage', 'push:send']);
  const api = async (d: TestDaemon, method: string, path: string, body?: unknown) => {
    const r = await call(d.api, method, path, { token: key, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.json.data;
  };
  const outboxRows = async (d: TestDaemon) =>
    (await d.daemon.db.query<{ message_id: string }>(`SELECT message_id FROM chat_push_outbox ORDER BY message_id`)).rows.map((r) => r.message_id);
  const pushSends = async (d: TestDaemon) =>
    (await d.daemon.db.query<{ target: string }>(`SELECT target FROM push_sends WHERE target_kind = 'user' ORDER BY id`)).rows.map((r) => r.target);

  const app = await api(first, 'POST', '/v1/push/apps', { name: 'Chat app' });
  for (const userId of ['alice', 'bob', 'carol']) {
    await api(first, 'POST', '/v1/chat-sdk/users/token', { userId, name: userId });
    await api(first, 'POST', '/v1/push/devices', { appId: app.id, token: `fcm-${userId}`, platform: 'android', userId });
  }
  await api(first, 'POST', '/v1/chat-sdk/channels', { type: 'messaging', id: 'crash', name: 'Crash', members: ['alice', 'bob', 'carol'] });
  await api(first, 'PATCH', '/v1/chat-sdk/channels/crash/members/carol', { muted: true });

  // The process stores the message and then does nothing more, as if it died right after the commit.
  first.daemon.modules.service<ChatModuleService>('chat').realtime.disableOfflinePushes();
  const m = await api(first, 'POST', '/v1/chat-sdk/channels/crash/messages', { userId: 'alice', text: 'are you there?' });
  await api(first, 'POST', '/v1/chat-sdk/channels/crash/messages', { userId: 'alice', text: 'no push for this', skipPush: true });
  t.same(await outboxRows(first), [m.id], "the message's push evaluation is stored with it (none for skipPush)");
  t.same(await pushSends(first), [], 'no push was made by the crashed process');
  await first.stopKeepingStore();
  live = null;

  const second = await startDaemon({}, first.reuse);
  live = second;
  const fcm = second.daemon.modules.service<PushModuleService>('push').simulators!.fcm;
  const [got] = await until(() => fcm.received().filter((r) => r.token === 'fcm-bob'), (r) => r.length > 0, 60_000);
  t.match(got.message, { notification: { title: 'Crash', body: 'are you there?' }, data: { channelId: 'crash', messageId: m.id, seq: String(m.seq) } }, 'bob is pushed by the job');
  await until(() => outboxRows(second), (rows) => rows.length === 0, 30_000);
  t.same(await outboxRows(second), [], 'the row is deleted once the push was handed over');
  // Another run of the job finds nothing: the push is not made twice.
  t.equal(await second.daemon.modules.service<ChatModuleService>('chat').realtime.runPushOutbox(new AbortController().signal), 0);
  await until(() => pushSends(second), (sends) => sends.length > 0, 30_000);
  t.same(await pushSends(second), ['bob'], 'one push, to bob only (alice sent it, carol muted the channel)');
  t.equal(fcm.received().filter((r) => r.token === 'fcm-bob').length, 1, 'bob got it once');
  t.equal(fcm.received().filter((r) => r.token !== 'fcm-bob').length, 0, 'nobody else');
});
