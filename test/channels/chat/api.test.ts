// The chat REST API over real HTTP against a whole daemon, on both backends: user tokens (minted; refused when forged,
// expired, of a rotated key, revoked, of a banned or deleted user or a suspended account; an API-key route refuses
// them), channels with unread counts and pages, a user token limited to its own channels and account, messages by seq,
// the clientMsgId retry (also racing), edits, deletes, read marks, members with roles and mutes, limits, webhook
// events, MCP tools.
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { ChatModuleService } from '../../../src/channels/chat/index.js';
import { accountWithKey, call, startDaemon, type CallResult } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

t.setTimeout(240_000);

const MAX_BYTES = 1024;
const MAX_MEMBERS = 5;

t.test(`chat REST API (${backendLabel})`, async (t) => {
  const d = await startDaemon({
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_CHAT_MAX_MESSAGE_BYTES: String(MAX_BYTES),
    FERRY_CHAT_MAX_MEMBERS_PER_CHANNEL: String(MAX_MEMBERS),
  });
  t.teardown(() => d.stop());
  const a = await accountWithKey(d, 'chat-a');
  const b = await accountWithKey(d, 'chat-b');
  const narrow = await accountWithKey(d, 'chat-a-narrow', ['push:manage']);

  // Webhook endpoints first: events nobody subscribes to are not stored.
  const hook = await call(d.api, 'POST', '/v1/webhooks', { token: a.token, body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });
  t.equal(hook.status, 200, hook.text);

  const api = (method: string, path: string, body?: unknown, token = a.token) => call(d.api, method, `/v1/chat-sdk${path}`, { token, body });
  const asUser = (jwt: string, method: string, path: string, body?: unknown) => call(d.api, method, `/v1/chat-sdk${path}`, { body, headers: { authorization: `Bearer ${jwt}` } });
  const mint = async (userId: string, extra: Record<string, unknown> = {}, token = a.token): Promise<string> => {
    const r = await api('POST', '/users/token', { userId, ...extra }, token);
    if (r.status !== 200) throw new Error(`mint ${userId}: ${r.text}`);
    return r.json.data.token as string;
  };
  const refused = (tt: Test, r: CallResult, status: number, code: string, what: string) => {
    tt.equal(r.status, status, `${what}: HTTP ${status} (${r.text.slice(0, 200)})`);
    tt.equal(r.json?.code, code, `${what}: ${code}`);
  };
  const chat = d.daemon.modules.service<ChatModuleService>('chat').chat;

  await t.test('a minted token opens the client routes; forged, expired and API-key misuse are refused', async (t) => {
    const r = await api('POST', '/users/token', { userId: 'tok-user', name: 'Tok', image: 'https://example.com/a.png', expiresInSeconds: 600 });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.code, 'CHAT_TOKEN_MINTED');
    const jwt = r.json.data.token as string;
    t.match(r.json.data.user, { id: 'tok-user', name: 'Tok', image: 'https://example.com/a.png', banned: false });
    const header = decodeProtectedHeader(jwt);
    const claims = decodeJwt(jwt);
    t.match(header, { alg: 'HS256', kid: '1' });
    t.match(claims, { iss: 'ferry', aud: 'chat-sdk', sub: 'tok-user', acc: a.account.id });
    t.equal(claims.exp! - claims.iat!, 600, 'lives expiresInSeconds');
    t.equal(new Date(r.json.data.expiresAt).getTime(), claims.exp! * 1000);

    const me = await asUser(jwt, 'GET', '/me');
    t.equal(me.status, 200, me.text);
    t.match(me.json.data, { id: 'tok-user', name: 'Tok' });

    const [h, p, s] = jwt.split('.');
    const flipped = `${h}.${p}.${s.slice(0, -2)}${s.endsWith('AA') ? 'BB' : 'AA'}`;
    refused(t, await asUser(flipped, 'GET', '/me'), 401, 'CHAT_TOKEN_INVALID', 'a wrong signature');
    const forgedClaims = Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url');
    refused(t, await asUser(`${h}.${forgedClaims}.${s}`, 'GET', '/me'), 401, 'CHAT_TOKEN_INVALID', 'claims changed under the signature');
    const otherAccount = Buffer.from(JSON.stringify({ ...claims, acc: b.account.id })).toString('base64url');
    refused(t, await asUser(`${h}.${otherAccount}.${s}`, 'GET', '/me'), 401, 'CHAT_TOKEN_INVALID', "another account's id in the claims");
    refused(t, await asUser('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl', 'GET', '/me'), 401, 'CHAT_TOKEN_INVALID', 'a JWT of nobody');

    // Signed with the account's real key, expired a minute ago (minting refuses lifetimes under 60 s).
    const now = Math.floor(Date.now() / 1000);
    const expired = await (chat as unknown as { tokens: { sign(a: string, u: string, g: number, i: number, e: number): Promise<string> } }).tokens.sign(a.account.id, 'tok-user', 1, now - 180, now - 60);
    refused(t, await asUser(expired, 'GET', '/me'), 401, 'CHAT_TOKEN_EXPIRED', 'an expired token');

    refused(t, await asUser(jwt, 'GET', '/users/tok-user'), 401, 'END_USER_TOKEN_NOT_ACCEPTED', 'a user token on an API-key route');
    refused(t, await asUser(jwt, 'POST', '/users/token', { userId: 'tok-user' }), 401, 'END_USER_TOKEN_NOT_ACCEPTED', 'a user minting tokens');
    refused(t, await asUser(jwt, 'POST', '/secret/rotate', {}), 401, 'END_USER_TOKEN_NOT_ACCEPTED', 'a user rotating the key');
    refused(t, await asUser(jwt, 'POST', '/channels', { type: 'messaging', members: ['tok-user'] }), 401, 'END_USER_TOKEN_NOT_ACCEPTED', 'a user creating a channel');
    refused(t, await call(d.api, 'GET', '/v1/account/balance', { headers: { authorization: `Bearer ${jwt}` } }), 401, 'END_USER_TOKEN_NOT_ACCEPTED', "another product's route");
    refused(t, await api('GET', '/me'), 401, 'CHAT_USER_TOKEN_REQUIRED', '/me with an API key');
    refused(t, await api('POST', '/users/token', { userId: 'x', expiresInSeconds: 31_000_000 }), 400, 'VALIDATION_ERROR', 'a lifetime past chat.maxTokenTtlSeconds');
    refused(t, await api('POST', '/users/token', { userId: 'bad id/slash' }), 400, 'VALIDATION_ERROR', 'a user id with a slash');
    refused(t, await api('POST', '/users/token', { userId: 'x' }, narrow.token), 403, 'INSUFFICIENT_SCOPE', 'a key without chat:manage');
  });

  await t.test('rotating the key: the old one holds for the grace, then is refused', async (t) => {
    const t1 = await mint('rot-user');
    t.equal((await asUser(t1, 'GET', '/me')).status, 200);
    const graced = await api('POST', '/secret/rotate', { graceSeconds: 3600 });
    t.equal(graced.status, 200, graced.text);
    t.equal(graced.json.data.generation, 2);
    t.ok(new Date(graced.json.data.previousValidUntil).getTime() > Date.now() + 3_000_000, 'the previous key valid for the grace');
    t.equal((await asUser(t1, 'GET', '/me')).status, 200, 'a token of the previous key within its grace');
    const t2 = await mint('rot-user');
    t.equal(decodeProtectedHeader(t2).kid, '2', 'new tokens name the new generation');
    t.equal((await asUser(t2, 'GET', '/me')).status, 200);
    const cut = await api('POST', '/secret/rotate', { graceSeconds: 0 });
    t.equal(cut.json.data.generation, 3);
    t.equal(cut.json.data.previousValidUntil, null);
    refused(t, await asUser(t1, 'GET', '/me'), 401, 'CHAT_TOKEN_INVALID', 'generation 1 after two rotations');
    refused(t, await asUser(t2, 'GET', '/me'), 401, 'CHAT_TOKEN_INVALID', 'generation 2 after a rotation without grace');
    t.equal((await asUser(await mint('rot-user'), 'GET', '/me')).status, 200, 'a fresh token works');
    // Another account's key did not move.
    const other = await mint('rot-user', {}, b.token);
    t.equal(decodeProtectedHeader(other).kid, '1');
    t.equal((await asUser(other, 'GET', '/me')).status, 200);
  });

  await t.test('revoked, banned and deleted users: their tokens are refused', async (t) => {
    const old = await mint('rev-user');
    const revoked = await api('POST', '/users/rev-user/revoke-tokens');
    t.equal(revoked.status, 200, revoked.text);
    t.equal(revoked.json.code, 'CHAT_TOKENS_REVOKED');
    refused(t, await asUser(old, 'GET', '/me'), 401, 'CHAT_TOKEN_REVOKED', 'a token minted before revoke-tokens');
    const fresh = await mint('rev-user');
    t.equal((await asUser(fresh, 'GET', '/me')).status, 200, 'a token minted right after works (even within the same second)');
    refused(t, await api('POST', '/users/nobody-here/revoke-tokens'), 404, 'CHAT_USER_NOT_FOUND', 'revoking an unknown user');

    const ban = await mint('ban-user');
    t.equal((await api('POST', '/users/ban-user/ban')).json.data.banned, true);
    refused(t, await asUser(ban, 'GET', '/me'), 403, 'CHAT_USER_BANNED', "a banned user's token");
    refused(t, await api('POST', '/users/token', { userId: 'ban-user' }), 403, 'CHAT_USER_BANNED', 'minting for a banned user');
    t.equal((await api('GET', '/users/ban-user')).json.data.banned, true);
    t.equal((await api('POST', '/users/ban-user/unban')).json.data.banned, false);
    t.equal((await asUser(ban, 'GET', '/me')).status, 200, 'unbanned: the token works again');

    const gone = await mint('gone-user');
    const ch = await api('POST', '/channels', { type: 'messaging', id: 'gone-room', members: ['gone-user', 'stay-user'] });
    t.equal(ch.status, 201, ch.text);
    const del = await api('DELETE', '/users/gone-user');
    t.equal(del.status, 200, del.text);
    t.same(del.json.data, { id: 'gone-user', deleted: true, channelsLeft: ['gone-room'] });
    refused(t, await asUser(gone, 'GET', '/me'), 401, 'CHAT_TOKEN_REVOKED', "a deleted user's token");
    refused(t, await api('GET', '/users/gone-user'), 404, 'CHAT_USER_NOT_FOUND', 'the deleted user');
    t.equal((await api('GET', '/channels/gone-room')).json.data.memberCount, 1, 'the member count follows');
    refused(t, await api('GET', '/users/tok-user', undefined, b.token), 404, 'CHAT_USER_NOT_FOUND', "another account's user");

    const c = await accountWithKey(d, 'chat-c');
    const suspended = await mint('sus-user', {}, c.token);
    t.equal((await asUser(suspended, 'GET', '/me')).status, 200);
    await d.adminCall('POST', '/admin/accounts/chat-c/suspend', { reason: 'test' });
    refused(t, await asUser(suspended, 'GET', '/me'), 403, 'ACCOUNT_SUSPENDED', "a suspended account's user");

    const patched = await api('PATCH', '/users/stay-user', { name: 'Stay', data: { plan: 'pro' } });
    t.match(patched.json.data, { id: 'stay-user', name: 'Stay', data: { plan: 'pro' } });
    t.equal((await api('PATCH', '/users/stay-user', { image: null })).json.data.name, 'Stay', 'fields not given are kept');
  });

  // Shared by the next subtests: alice owns `general` with bob; alice and carol are in `side`.
  const alice = await mint('alice', { name: 'Alice' });
  const bob = await mint('bob', { name: 'Bob' });
  const carol = await mint('carol');

  await t.test('channels: created with members, listed with unread counts and pages, limited to members', async (t) => {
    const general = await api('POST', '/channels', { type: 'messaging', id: 'general', members: ['bob'], createdBy: 'alice', name: 'General', data: { topic: 'all' } });
    t.equal(general.status, 201, general.text);
    t.equal(general.json.code, 'CHAT_CHANNEL_CREATED');
    t.match(general.json.data, { id: 'general', type: 'messaging', name: 'General', createdBy: 'alice', memberCount: 2, lastSeq: 0, data: { topic: 'all' } });
    t.same(
      general.json.data.members.map((m: { userId: string; role: string }) => [m.userId, m.role]),
      [
        ['alice', 'owner'],
        ['bob', 'member'],
      ],
    );
    refused(t, await api('POST', '/channels', { type: 'messaging', id: 'general', members: ['bob'] }), 409, 'CHAT_CHANNEL_EXISTS', 'an id in use');
    const side = await api('POST', '/channels', { type: 'livechat', members: ['alice', 'carol'] });
    t.equal(side.status, 201);
    const sideId = side.json.data.id as string;
    t.match(sideId, /^chn_/);
    refused(
      t,
      await api('POST', '/channels', { type: 'messaging', members: ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'] }),
      422,
      'CHAT_TOO_MANY_MEMBERS',
      'more members than chat.maxMembersPerChannel',
    );

    const sent = await asUser(bob, 'POST', '/channels/general/messages', { text: 'hello alice', clientMsgId: 'b-1' });
    t.equal(sent.status, 201, sent.text);

    const mine = await asUser(alice, 'GET', '/channels');
    t.equal(mine.status, 200, mine.text);
    t.same(
      mine.json.data.channels.map((c: { id: string; unreadCount: number }) => [c.id, c.unreadCount]),
      [
        ['general', 1],
        [sideId, 0],
      ],
      "alice's channels, newest activity first, with unread counts",
    );
    t.equal((await asUser(bob, 'GET', '/channels')).json.data.channels[0].unreadCount, 0, "the sender's own message is read");
    const byKey = await api('GET', '/channels?member=alice');
    t.same(
      byKey.json.data.channels.map((c: { id: string; unreadCount: number }) => c.unreadCount),
      [1, 0],
      'an API key lists a member\'s the same',
    );
    const all = await api('GET', '/channels?limit=200');
    t.ok(all.json.data.channels.length >= 3);
    t.equal(all.json.data.channels[0].unreadCount, null, 'a list that is nobody\'s has no unread counts');
    const p1 = await api('GET', '/channels?member=alice&limit=1');
    t.equal(p1.json.data.channels.length, 1);
    t.type(p1.json.data.nextCursor, 'string');
    const p2 = await api('GET', `/channels?member=alice&limit=1&cursor=${encodeURIComponent(p1.json.data.nextCursor)}`);
    t.same([p1.json.data.channels[0].id, p2.json.data.channels[0].id], ['general', sideId], 'pages follow the order, without overlap');
    const p3 = await api('GET', `/channels?member=alice&limit=1&cursor=${encodeURIComponent(p2.json.data.nextCursor)}`);
    t.same(p3.json.data, { channels: [], nextCursor: null });
    refused(t, await api('GET', '/channels?cursor=bm90LWEtY3Vyc29y'), 400, 'VALIDATION_ERROR', 'a cursor this list did not give');
    t.same(
      (await api('GET', '/channels?type=livechat&member=alice')).json.data.channels.map((c: { id: string }) => c.id),
      [sideId],
      'filtered by type',
    );

    const one = await asUser(alice, 'GET', '/channels/general');
    t.match(one.json.data, { id: 'general', lastSeq: 1, lastReadSeq: 0, unreadCount: 1 });
    refused(t, await asUser(bob, 'GET', `/channels/${sideId}`), 404, 'CHAT_CHANNEL_NOT_FOUND', "a channel bob is not in");
    refused(t, await asUser(bob, 'GET', `/channels/${sideId}/messages`), 404, 'CHAT_CHANNEL_NOT_FOUND', "its messages");
    refused(t, await asUser(bob, 'POST', `/channels/${sideId}/messages`, { text: 'let me in' }), 404, 'CHAT_CHANNEL_NOT_FOUND', 'sending to it');
    refused(t, await asUser(bob, 'GET', `/channels/${sideId}/members`), 404, 'CHAT_CHANNEL_NOT_FOUND', 'its members');
    refused(t, await asUser(bob, 'GET', '/channels?member=alice'), 403, 'CHAT_NOT_ALLOWED', "listing alice's channels with bob's token");
    refused(t, await asUser(bob, 'PATCH', '/channels/general', { name: 'Mine' }), 403, 'CHAT_NOT_ALLOWED', 'a member who is no owner renaming');
    const renamed = await asUser(alice, 'PATCH', '/channels/general', { name: 'Town square' });
    t.equal(renamed.json.data.name, 'Town square', 'the owner renames it');
    refused(t, await asUser(carol, 'DELETE', '/channels/general'), 401, 'END_USER_TOKEN_NOT_ACCEPTED', 'a user deleting a channel');
    const members = await asUser(bob, 'GET', '/channels/general/members?limit=1');
    t.same(members.json.data.members.map((m: { userId: string }) => m.userId), ['alice']);
    const rest = await asUser(bob, 'GET', `/channels/general/members?cursor=${members.json.data.nextCursor}`);
    t.same(rest.json.data.members.map((m: { userId: string }) => m.userId), ['bob']);
  });

  await t.test('messages: seq order, pages, clientMsgId retries (also racing), system messages, limits', async (t) => {
    for (let i = 2; i <= 6; i++) {
      const r = await asUser(alice, 'POST', '/channels/general/messages', { text: `m${i}`, attachments: [{ type: 'image', url: 'https://example.com/i.png' }], data: { i } });
      t.equal(r.status, 201, r.text);
      t.match(r.json.data, { seq: i, userId: 'alice', type: 'regular', text: `m${i}`, data: { i } });
    }
    const after = await asUser(bob, 'GET', '/channels/general/messages?afterSeq=2&limit=2');
    t.same(after.json.data.messages.map((m: { seq: number }) => m.seq), [3, 4]);
    t.equal(after.json.data.hasMore, true);
    const tail = await asUser(bob, 'GET', '/channels/general/messages?afterSeq=4');
    t.same(tail.json.data.messages.map((m: { seq: number }) => m.seq), [5, 6]);
    t.equal(tail.json.data.hasMore, false);
    const before = await asUser(bob, 'GET', '/channels/general/messages?beforeSeq=3');
    t.same(before.json.data.messages.map((m: { seq: number }) => m.seq), [1, 2]);
    t.equal(before.json.data.hasMore, false);
    const newest = await api('GET', '/channels/general/messages?limit=2');
    t.same(newest.json.data.messages.map((m: { seq: number }) => m.seq), [5, 6], 'the newest, oldest first');
    t.equal(newest.json.data.hasMore, true);
    refused(t, await api('GET', '/channels/nope/messages'), 404, 'CHAT_CHANNEL_NOT_FOUND', 'an unknown channel');
    refused(t, await api('GET', '/channels/general/messages?limit=500'), 400, 'VALIDATION_ERROR', 'a limit past 200');

    const first = await asUser(alice, 'POST', '/channels/general/messages', { text: 'once', clientMsgId: 'a-once' });
    t.equal(first.status, 201);
    const again = await asUser(alice, 'POST', '/channels/general/messages', { text: 'once', clientMsgId: 'a-once' });
    t.equal(again.status, 200, again.text);
    t.equal(again.json.code, 'CHAT_MESSAGE_ALREADY_SENT');
    t.equal(again.json.data.id, first.json.data.id, 'the same message');
    t.equal(again.json.data.seq, first.json.data.seq);
    const bobSame = await asUser(bob, 'POST', '/channels/general/messages', { text: 'mine', clientMsgId: 'a-once' });
    t.equal(bobSame.status, 201, "another sender's clientMsgId is its own");
    refused(t, await asUser(alice, 'POST', '/channels/' + (await asUser(alice, 'GET', '/channels?type=livechat')).json.data.channels[0].id + '/messages', { text: 'x', clientMsgId: 'a-once' }), 409, 'CONFLICT', 'a clientMsgId reused in another channel');

    const race = await Promise.all(Array.from({ length: 8 }, () => asUser(bob, 'POST', '/channels/general/messages', { text: 'race', clientMsgId: 'b-race' })));
    t.same(race.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201], 'one stored, seven answered with it');
    t.equal(new Set(race.map((r) => r.json.data.id)).size, 1, 'every answer names the same message');
    const { rows } = await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM chat_messages WHERE account_id = $1 AND client_msg_id = 'b-race'`, [a.account.id]);
    t.equal(rows[0].n, 1, 'one row');
    const seqs = await d.daemon.db.query<{ n: number; max: number }>(`SELECT count(*)::int AS n, max(seq)::int AS max FROM chat_messages WHERE account_id = $1 AND channel_id = 'general'`, [a.account.id]);
    t.equal(seqs.rows[0].n, seqs.rows[0].max, 'seqs without gaps (the losers took none)');

    const system = await api('POST', '/channels/general/messages', { text: 'Alice renamed the channel', clientMsgId: 'sys-1' });
    t.equal(system.status, 201, system.text);
    t.match(system.json.data, { userId: null, type: 'system' });
    const systemAgain = await api('POST', '/channels/general/messages', { text: 'Alice renamed the channel', clientMsgId: 'sys-1' });
    t.equal(systemAgain.json.data.id, system.json.data.id, "the system's clientMsgId retries too");
    const asBob = await api('POST', '/channels/general/messages', { text: 'from the server as bob', userId: 'bob' });
    t.match(asBob.json.data, { userId: 'bob', type: 'regular' });
    refused(t, await api('POST', '/channels/general/messages', { text: 'x', userId: 'carol' }), 404, 'CHAT_MEMBER_NOT_FOUND', 'the server sending as a non-member');
    refused(t, await asUser(bob, 'POST', '/channels/general/messages', { text: 'x', userId: 'alice' }), 403, 'CHAT_NOT_ALLOWED', 'a user sending as another');
    refused(t, await asUser(bob, 'POST', '/channels/general/messages', { text: 'x'.repeat(MAX_BYTES) }), 413, 'CHAT_MESSAGE_TOO_LARGE', 'a message past chat.maxMessageBytes');
    refused(t, await asUser(bob, 'POST', '/channels/general/messages', {}), 400, 'VALIDATION_ERROR', 'neither text nor attachments');
    refused(t, await api('POST', '/channels/nope/messages', { text: 'x' }), 404, 'CHAT_CHANNEL_NOT_FOUND', 'an unknown channel');
  });

  await t.test('edits, deletes and read marks', async (t) => {
    const m = (await asUser(alice, 'POST', '/channels/general/messages', { text: 'typo' })).json.data;
    const b1 = (await asUser(bob, 'POST', '/channels/general/messages', { text: 'bob says' })).json.data;
    const edited = await asUser(alice, 'PATCH', `/channels/general/messages/${m.id}`, { text: 'fixed' });
    t.equal(edited.status, 200, edited.text);
    t.match(edited.json.data, { id: m.id, seq: m.seq, text: 'fixed', attachments: [] });
    refused(t, await asUser(bob, 'PATCH', `/channels/general/messages/${m.id}`, { text: 'mine now' }), 403, 'CHAT_NOT_ALLOWED', "bob editing alice's message");
    t.equal((await api('PATCH', `/channels/general/messages/${m.id}`, { data: { pinned: true } })).json.data.text, 'fixed', 'the server edits; other fields stay');
    refused(t, await asUser(bob, 'DELETE', `/channels/general/messages/${m.id}`), 403, 'CHAT_NOT_ALLOWED', "a member deleting another's message");
    const del = await asUser(alice, 'DELETE', `/channels/general/messages/${b1.id}`);
    t.equal(del.status, 200, 'an owner deletes a member\'s message');
    t.match(del.json.data, { id: b1.id, seq: b1.seq, text: '', attachments: [], data: {} });
    t.type(del.json.data.deletedAt, 'string');
    const delAgain = await asUser(alice, 'DELETE', `/channels/general/messages/${b1.id}`);
    t.equal(delAgain.json.data.deletedAt, del.json.data.deletedAt, 'deleting again changes nothing');
    refused(t, await asUser(bob, 'PATCH', `/channels/general/messages/${b1.id}`, { text: 'back' }), 403, 'CHAT_NOT_ALLOWED', 'editing a deleted message');
    const listed = await api('GET', `/channels/general/messages?afterSeq=${b1.seq - 1}&limit=1`);
    t.match(listed.json.data.messages[0], { id: b1.id, seq: b1.seq, text: '' }, 'the seq stays in the history');
    refused(t, await api('DELETE', '/channels/general/messages/msg_nope'), 404, 'CHAT_MESSAGE_NOT_FOUND', 'an unknown message');

    const read = await asUser(carol, 'GET', '/channels');
    t.notOk(read.json.data.channels.some((c: { id: string }) => c.id === 'general'), 'carol is not in general');
    // Bob's own message moved his mark to it; alice writes two more.
    t.equal((await asUser(bob, 'GET', '/channels/general')).json.data.lastReadSeq, b1.seq, "the sender's mark is at their message");
    for (const text of ['one', 'two']) await asUser(alice, 'POST', '/channels/general/messages', { text });
    t.equal((await asUser(bob, 'GET', '/channels/general')).json.data.unreadCount, 2);
    const r1 = await asUser(bob, 'POST', '/channels/general/read', { seq: b1.seq + 1 });
    t.equal(r1.status, 200, r1.text);
    t.equal(r1.json.data.lastReadSeq, b1.seq + 1);
    t.equal((await asUser(bob, 'GET', '/channels/general')).json.data.unreadCount, 1);
    t.equal((await asUser(bob, 'POST', '/channels/general/read', { seq: 1 })).json.data.lastReadSeq, b1.seq + 1, 'never back');
    const top = await asUser(bob, 'POST', '/channels/general/read', { seq: 1_000_000 });
    const lastSeq = (await api('GET', '/channels/general')).json.data.lastSeq as number;
    t.equal(top.json.data.lastReadSeq, lastSeq, 'never past the last message');
    t.equal((await asUser(bob, 'GET', '/channels/general')).json.data.unreadCount, 0);
    const byServer = await api('POST', '/channels/general/read', { seq: 2, userId: 'alice' });
    t.equal(byServer.status, 200);
    t.equal((await api('GET', '/channels?member=alice')).json.data.channels.find((c: { id: string }) => c.id === 'general').unreadCount, lastSeq - byServer.json.data.lastReadSeq);
    refused(t, await api('POST', '/channels/general/read', { seq: 2 }), 400, 'VALIDATION_ERROR', 'an API key naming no member');
    refused(t, await api('POST', '/channels/general/read', { seq: 2, userId: 'carol' }), 404, 'CHAT_MEMBER_NOT_FOUND', 'a non-member');
    refused(t, await asUser(bob, 'POST', '/channels/general/read', { seq: 2, userId: 'alice' }), 403, 'CHAT_NOT_ALLOWED', "bob marking alice's reads");
  });

  await t.test('members: add, roles, mute, leave, remove', async (t) => {
    const added = await api('POST', '/channels/general/members', { userIds: ['carol', 'bob'] });
    t.equal(added.status, 200, added.text);
    t.same(added.json.data.added.map((m: { userId: string }) => m.userId), ['carol'], 'bob was a member already');
    t.equal(added.json.data.memberCount, 3);
    t.equal((await asUser(carol, 'GET', '/channels/general')).status, 200, 'carol sees it now');
    refused(t, await api('POST', '/channels/general/members', { userIds: ['x1', 'x2', 'x3'] }), 422, 'CHAT_TOO_MANY_MEMBERS', 'past the limit');
    t.equal((await api('GET', '/channels/general')).json.data.memberCount, 3, 'nobody was added');

    const muted = await api('PATCH', '/channels/general/members/carol', { muted: true });
    t.match(muted.json.data, { userId: 'carol', muted: true, role: 'member' });
    refused(t, await asUser(carol, 'POST', '/channels/general/messages', { text: 'can I?' }), 403, 'CHAT_NOT_ALLOWED', 'a muted member sending');
    refused(t, await asUser(bob, 'PATCH', '/channels/general/members/carol', { muted: false }), 403, 'CHAT_NOT_ALLOWED', 'a member unmuting another');
    t.equal((await asUser(alice, 'PATCH', '/channels/general/members/carol', { muted: false })).json.data.muted, false, 'the owner unmutes');
    t.equal((await asUser(carol, 'POST', '/channels/general/messages', { text: 'I can' })).status, 201);
    t.equal((await api('PATCH', '/channels/general/members/bob', { role: 'owner' })).json.data.role, 'owner');
    refused(t, await api('PATCH', '/channels/general/members/nobody', { role: 'owner' }), 404, 'CHAT_MEMBER_NOT_FOUND', 'a non-member');

    refused(t, await asUser(carol, 'DELETE', '/channels/general/members/bob'), 403, 'CHAT_NOT_ALLOWED', 'a member removing another');
    const left = await asUser(carol, 'DELETE', '/channels/general/members/carol');
    t.equal(left.status, 200, left.text);
    refused(t, await asUser(carol, 'GET', '/channels/general'), 404, 'CHAT_CHANNEL_NOT_FOUND', 'after leaving');
    refused(t, await api('DELETE', '/channels/general/members/carol'), 404, 'CHAT_MEMBER_NOT_FOUND', 'removing a non-member');
    refused(t, await api('DELETE', '/channels/nope/members/carol'), 404, 'CHAT_CHANNEL_NOT_FOUND', 'an unknown channel');
    t.equal((await api('GET', '/channels/general')).json.data.memberCount, 2);
  });

  await t.test('two accounts: same ids, separate worlds', async (t) => {
    const bAlice = await mint('alice', {}, b.token);
    refused(t, await asUser(bAlice, 'GET', '/channels/general'), 404, 'CHAT_CHANNEL_NOT_FOUND', "account b's alice and account a's channel");
    refused(t, await api('GET', '/channels/general', undefined, b.token), 404, 'CHAT_CHANNEL_NOT_FOUND', "account b's key and account a's channel");
    const created = await api('POST', '/channels', { type: 'messaging', id: 'general', members: ['alice'] }, b.token);
    t.equal(created.status, 201, 'the same id in another account');
    const sent = await asUser(bAlice, 'POST', '/channels/general/messages', { text: 'in b', clientMsgId: 'a-once' });
    t.equal(sent.status, 201);
    t.equal(sent.json.data.seq, 1, "b's channel has its own seqs");
    t.same((await asUser(bAlice, 'GET', '/channels/general/messages')).json.data.messages.map((m: { text: string }) => m.text), ['in b']);
    t.notOk((await asUser(alice, 'GET', '/channels/general/messages?limit=200')).json.data.messages.some((m: { text: string }) => m.text === 'in b'), "a's alice does not see it");
    const deleted = await api('DELETE', '/channels/general', undefined, b.token);
    t.equal(deleted.json?.code, 'CHAT_CHANNEL_DELETED', 'b deletes its own');
    t.equal((await api('GET', '/channels/general')).status, 200, "a's channel stays");
  });

  await t.test('webhook events are written with the changes', async (t) => {
    t.equal((await api('PATCH', '/channels/gone-room', { data: { archived: true } })).status, 200);
    t.equal((await api('DELETE', '/channels/gone-room')).status, 200);
    refused(t, await api('DELETE', '/channels/gone-room'), 404, 'CHAT_CHANNEL_NOT_FOUND', 'deleted already');
    const { rows } = await d.daemon.db.query<{ type: string; payload: Record<string, any>; message_key: string }>(
      `SELECT type, payload, message_key FROM webhook_events WHERE account_id = $1 AND type LIKE 'chat.%' ORDER BY seq`,
      [a.account.id],
    );
    const types = new Set(rows.map((r) => r.type));
    for (const type of ['chat.message.new', 'chat.message.updated', 'chat.message.deleted', 'chat.channel.created', 'chat.channel.updated', 'chat.channel.deleted', 'chat.member.added', 'chat.member.removed']) {
      t.ok(types.has(type), `${type} was written`);
    }
    const firstNew = rows.find((r) => r.type === 'chat.message.new')!;
    t.match(firstNew.payload, { channelId: 'general', seq: 1, userId: 'bob', text: 'hello alice', clientMsgId: 'b-1' });
    t.equal(firstNew.message_key, 'general', "a channel's events keep their order");
    const news = rows.filter((r) => r.type === 'chat.message.new' && r.payload.channelId === 'general').map((r) => r.payload.seq as number);
    t.same(news, [...news].sort((x, y) => x - y), 'message.new in seq order');
    t.equal(rows.filter((r) => r.type === 'chat.message.new' && r.payload.clientMsgId === 'b-race').length, 1, 'the racing retries wrote one event');
    t.match(rows.find((r) => r.type === 'chat.member.removed' && r.payload.channelId === 'gone-room')!.payload, { userIds: ['gone-user'] });
    t.match(rows.find((r) => r.type === 'chat.channel.deleted')!.payload, { channelId: 'gone-room' });
    const bEvents = await d.daemon.db.query(`SELECT 1 FROM webhook_events WHERE account_id = $1 AND type LIKE 'chat.%'`, [b.account.id]);
    t.equal(bEvents.rows.length, 0, 'account b subscribes to nothing: none of its events are kept');
  });

  await t.test('MCP tools call the server routes; the OpenAPI document lists who may call', async (t) => {
    const transport = new StreamableHTTPClientTransport(new URL(`${d.api}/mcp`), { requestInit: { headers: { authorization: `Basic ${a.token}` } } });
    const client = new Client({ name: 'ferry-chat-test', version: '1.0.0' });
    await client.connect(transport);
    t.teardown(() => client.close());
    const structured = (r: unknown) => (r as { structuredContent: Record<string, any> }).structuredContent;
    const made = await client.callTool({ name: 'create_chat_channel', arguments: { type: 'messaging', id: 'mcp-room', members: ['alice'], createdBy: 'bob' } });
    t.notOk(made.isError, JSON.stringify(made).slice(0, 300));
    const added = await client.callTool({ name: 'add_chat_members', arguments: { channelId: 'mcp-room', userIds: ['carol'] } });
    t.equal(structured(added).data.memberCount, 3);
    const sent = await client.callTool({ name: 'send_chat_message', arguments: { channelId: 'mcp-room', text: 'from an agent', clientMsgId: 'mcp-1' } });
    t.match(structured(sent).data, { seq: 1, type: 'system' });
    const listed = await client.callTool({ name: 'list_chat_messages', arguments: { channelId: 'mcp-room', afterSeq: 0 } });
    t.same(structured(listed).data.messages.map((m: { text: string }) => m.text), ['from an agent']);
    const channels = await client.callTool({ name: 'list_chat_channels', arguments: { member: 'carol' } });
    t.ok(structured(channels).data.channels.some((c: { id: string; unreadCount: number }) => c.id === 'mcp-room' && c.unreadCount === 1));
    const tok = await client.callTool({ name: 'create_chat_user_token', arguments: { userId: 'mcp-user' } });
    t.equal((await asUser(structured(tok).data.token, 'GET', '/me')).json.data.id, 'mcp-user');

    const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
    const schemes = (op: { security?: Array<Record<string, unknown>> }) => (op.security ?? []).flatMap((s) => Object.keys(s));
    t.ok(schemes(doc.paths['/chat-sdk/channels/{channelId}/messages'].post).includes('endUserToken'), 'sending takes a user token');
    t.notOk(schemes(doc.paths['/chat-sdk/users/token'].post).includes('endUserToken'), 'minting does not');
    t.ok(doc.paths['/chat-sdk/channels'].get.tags.includes('chat'));
  });
});
