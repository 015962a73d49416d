// Business numbers across instances (issue 42): a number added through one daemon's admin API is used by another
// daemon on the same Postgres and Redis at once (numbers are read from SQL at each use: no cache to invalidate).
import t from 'tap';
import { call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel, REDIS_URL } from '../../helpers/env.js';
import { sign } from './fixtures.js';
import { api, customer, messengerOf, newNumber } from './helpers.js';
import { A, eventsOf, inboundBody } from './numbers-fixtures.js';

t.setTimeout(300_000);

t.test(`two daemons on one Postgres and Redis: a number added on one is used by the other (${backendLabel})`, async (t) => {
  const shared = process.env.DATABASE_URL && REDIS_URL;
  if (!shared) {
    t.pass('one embedded store per daemon: covered on Postgres + Redis');
    return;
  }
  const secret = 'ef'.repeat(32);
  const d1 = await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret, FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => d1.stop());
  const d2 = await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret, FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', DATABASE_URL: d1.reuse.env.DATABASE_URL!, FERRY_REDIS_KEY_PREFIX: d1.reuse.env.FERRY_REDIS_KEY_PREFIX! });
  t.teardown(() => d2.stopKeepingStore());
  const alpha = await customer(d1, 'alpha');
  t.equal((await api(d1, alpha.token).call('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).status, 200);
  // Seen by d2 before the number exists: an inbound naming it is refused there.
  const user = newNumber();
  const raw = inboundBody(A.phoneNumberId, A.wabaId, user, `wamid.two-${user}`);
  const post = () => call(d2.api, 'POST', '/v1/messenger/webhook', { raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(A.appSecret, raw) } });
  t.equal((await post()).status, 401, 'unknown on d2 before it is added');
  await d1.adminCall('POST', '/admin/messenger/numbers', { ...A, account: 'alpha' });
  t.equal((await post()).status, 200, 'd2 verifies with the app secret added on d1');
  t.same(await eventsOf(d2, 'messenger.inbound', `wamid.two-${user}`), [alpha.accountId]);
  const shown = await d2.adminCall('GET', `/admin/messenger/numbers/${A.phoneNumberId}`);
  t.equal(shown.account, 'alpha');
  // d2 sends from it with its credentials (d2's embedded platform serves the number from the shared table).
  const r = await api(d2, alpha.token).send({ to: newNumber(), type: 'template', template: { name: 'hello_world', language: 'en_US' } });
  t.equal(r.status, 200, r.text);
  t.match(r.json.data.wamid, /^wamid\./);
  t.equal(messengerOf(d2).simulator!.sent.at(-1)?.from, A.phoneNumberId);
});

t.test(`messenger.account: the config number is its account's only (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_MESSENGER_ACCOUNT: 'owner', FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '10', FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => d.stop());
  const owner = await customer(d, 'owner');
  const other = await customer(d, 'other');
  for (const c of [owner, other]) t.equal((await api(d, c.token).call('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).status, 200);
  const user = newNumber();
  const hello = { to: user, type: 'template', template: { name: 'hello_world', language: 'en_US' } };
  t.equal((await api(d, owner.token).send(hello)).status, 200, 'the owner sends from it');
  const refused = await api(d, other.token).send(hello);
  t.equal(refused.status, 422);
  t.equal(refused.json.code, 'MESSENGER_NO_NUMBER', 'another account has no number to send from');
  const wamid = await messengerOf(d).simulator!.userReply(user, 'hi');
  t.same(await eventsOf(d, 'messenger.inbound', wamid), [owner.accountId], "the inbound on it is the owner's");
  const listed = await d.adminCall('GET', '/admin/messenger/numbers');
  t.match(listed.numbers[0], { phoneNumberId: '100000000000001', account: 'owner', source: 'config' });
});
