// ProviderClients keeps one client per app and service while its credentials stay the same, builds a new one when
// they change, and closes the clients nobody used for ten minutes (a deleted or quiet app's connections and sessions).
import t from 'tap';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { ProviderClients, type ClientSpec } from '../../../src/channels/push/provider-clients.js';
import type { PushProviderClient } from '../../../src/channels/push/providers/types.js';
import type { ModuleCredentials } from '../../../src/security/credential-store.js';

t.test(`provider clients: reuse, rebuild on new credentials, idle ones closed (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_PUSH_SIMULATOR: 'off' });
  t.teardown(() => d.stop());
  const { token, account } = await accountWithKey(d, 'push-clients');
  const appA = (await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'a' } })).json.data.id as string;
  const appB = (await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'b' } })).json.data.id as string;

  // The stored credential as the store would open it: the test changes it to stand for a rotation.
  let stored: string | null = '{"v":1}';
  const credentials = { get: async () => stored } as unknown as ModuleCredentials;
  const built: ClientSpec[] = [];
  let closed = 0;
  const build = async (spec: ClientSpec): Promise<PushProviderClient> => {
    built.push(spec);
    return { send: async () => ({ kind: 'sent', providerId: 'x' }), close: async () => void closed++ };
  };
  let now = Date.UTC(2026, 10, 29, 9, 0, 0);
  const clients = new ProviderClients({ db: d.daemon.db, credentials, build, clock: () => now });

  t.equal((await clients.lookup(account.id, appA, 'fcm')).kind, 'client');
  now += 5 * 60_000;
  await clients.lookup(account.id, appA, 'fcm');
  t.equal(built.length, 1, 'the same credentials: the same client');
  stored = '{"v":2}';
  await clients.lookup(account.id, appA, 'fcm');
  t.equal(built.length, 2, 'a rotated credential: a new client');
  t.equal(closed, 1, 'the old one closed');

  now += 11 * 60_000;
  await clients.lookup(account.id, appB, 'fcm');
  t.equal(closed, 2, "app A's client, idle for eleven minutes, closed by the next lookup");
  await clients.lookup(account.id, appA, 'fcm');
  t.equal(built.length, 4, 'app A gets a new client when it sends again');
  t.same((await clients.lookup('acc_other', appA, 'fcm')).kind, 'none', "another account's app is not found");
  await clients.close();
  t.equal(closed, 4, 'close() closes the rest');
});
