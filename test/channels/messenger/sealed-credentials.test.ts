// Messenger credentials sealed with `ferry messenger seal`: the config holds sealed:…, the daemon opens it with its
// secret key, and a provider that only accepts the real token and signs with the real app secret sees a working
// Ferry. A daemon with another secret key refuses to start, naming the setting.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { MessengerSimulator } from '../../../src/sim/messenger/messenger-simulator.js';
import { ferryRun, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { api, customer, newNumber, statusUntil } from './helpers.js';

t.test(`sealed messenger credentials (${backendLabel})`, async (t) => {
  const creds = { accessToken: 'EAAG-fake-token-for-tests', appSecret: 'fake-app-secret-for-tests', phoneNumberId: '106540352242922', businessAccountId: '102290129340398' };
  const secretKey = randomBytes(32).toString('hex');
  const sealEnv = { FERRY_SECURITY_SECRET_KEY: secretKey, FERRY_DATA_DIR: mkdtempSync(join(tmpdir(), 'ferry-seal-')) };
  const token = await ferryRun(['messenger', 'seal', creds.accessToken], sealEnv);
  t.equal(token.code, 0, token.stderr);
  t.match(token.stdout, /^sealed:\S+\n$/, 'prints one sealed value');
  t.notMatch(token.stdout, creds.accessToken, 'the plain token is not in it');
  const secret = await ferryRun(['messenger', 'seal', creds.appSecret], sealEnv);
  t.equal(secret.code, 0, secret.stderr);

  let d: TestDaemon | null = null;
  const sim = new MessengerSimulator({ ...creds, webhookUrl: () => (d ? `${d.api}/v1/messenger/webhook` : null), statusDelayMs: 10 });
  await sim.start();
  t.teardown(() => sim.stop());
  const env = {
    FERRY_MESSENGER_BASE_URL: sim.url,
    FERRY_MESSENGER_PHONE_NUMBER_ID: creds.phoneNumberId,
    FERRY_MESSENGER_BUSINESS_ACCOUNT_ID: creds.businessAccountId,
    FERRY_MESSENGER_ACCESS_TOKEN: token.stdout.trim(),
    FERRY_MESSENGER_APP_SECRET: secret.stdout.trim(),
  };

  const wrongKey = await startDaemon({ ...env, FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('hex') }).then(
    async (x) => {
      await x.stop();
      return null;
    },
    (err: Error) => err,
  );
  t.match(wrongKey?.message, /messenger\.accessToken is sealed with another key/, 'another secret key cannot open it, and says which setting');

  d = await startDaemon({ ...env, FERRY_SECURITY_SECRET_KEY: secretKey });
  t.teardown(() => d!.stop());
  const c = await customer(d, 'sealed');
  const r = await api(d, c.token).send({ to: newNumber(), type: 'template', template: { name: 'hello_world', language: 'en_US' } });
  t.equal(r.status, 200, r.text);
  const s = await statusUntil(d, c.token, r.json.data.messageId, (x) => x.status === 'read', 20_000);
  t.equal(s.status, 'read', 'the provider took the unsealed token, and its signed statuses verified with the unsealed app secret');
  t.equal(sim.sent.length, 1);
});
