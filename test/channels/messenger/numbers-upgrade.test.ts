// A business number added before the credential store (migration 0036: credentials sealed in messenger_numbers) still
// sends after the upgrade: migrations 0038 (the table) and 0039 (messenger's copy) move its sealed credentials into provider_credentials unchanged (the messenger
// module's credential key is the one that sealed them), and the columns go. GET /admin/credentials shows them as
// fingerprints.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { credentialsCipher, seal, SEALED_PREFIX } from '../../../src/channels/messenger/sealed-credentials.js';
import { deriveKey } from '../../../src/security/secrets.js';
import { openDb } from '../../../src/store/sql/db.js';
import { startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { api, customer, messengerOf, newNumber, statusUntil } from './helpers.js';

t.setTimeout(300_000);

const OLD = { phoneNumberId: '300000000000077', wabaId: '310000000000077', accessToken: 'EAAG-token-sealed-before-0037-0123', appSecret: 'app-secret-sealed-before-0037-0123', verifyToken: 'verify-sealed-before-0037' };

t.test(`a number added before the credential store still sends (${backendLabel})`, async (t) => {
  const secretKey = 'ab'.repeat(32);
  const master = Buffer.from(secretKey, 'hex');
  const env = { FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '10', FERRY_SECURITY_SECRET_KEY: secretKey };
  const first = await startDaemon(env);
  const legacy = await customer(first, 'legacy');
  await first.stopKeepingStore();

  // The database as 0036 left it, with a number sealed the way BusinessNumbers sealed it then.
  const db = await openDb({ url: first.reuse.store.url, dataDir: first.reuse.store.dataDir, poolSize: 1 });
  const sealed = (v: string) => seal(credentialsCipher(master), v).slice(SEALED_PREFIX.length);
  await db.query(`DROP TABLE provider_credentials`);
  await db.query(`DELETE FROM schema_migrations WHERE version IN (38, 39)`);
  await db.query(`ALTER TABLE messenger_numbers ADD COLUMN access_token_sealed text, ADD COLUMN app_secret_sealed text, ADD COLUMN verify_token_sealed text`);
  await db.query(
    `INSERT INTO messenger_numbers (phone_number_id, account_id, display_number, waba_id, access_token_sealed, app_secret_sealed, verify_token_sealed, created_at, updated_at)
     VALUES ($1, $2, NULL, $3, $4, $5, $6, 1, 1)`,
    [OLD.phoneNumberId, legacy.accountId, OLD.wabaId, sealed(OLD.accessToken), sealed(OLD.appSecret), sealed(OLD.verifyToken)],
  );
  await db.close();

  const d = await startDaemon(env, first.reuse);
  t.teardown(() => d.stop());
  const { rows: columns } = await d.daemon.db.query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_name = 'messenger_numbers' AND column_name LIKE '%_sealed'`);
  t.same(columns, [], 'the sealed columns are gone');
  const { rows: moved } = await d.daemon.db.query<{ name: string; account_id: string }>(`SELECT name, account_id FROM provider_credentials WHERE module = 'messenger' ORDER BY name`);
  t.same(
    moved.map((r) => [r.account_id, r.name]),
    ['accessToken', 'appSecret', 'verifyToken'].map((s) => [legacy.accountId, `number:${OLD.phoneNumberId}:${s}`]),
  );

  // Fingerprints as before (the same keyed hash), and the credentials open: the number sends.
  const shown = await d.adminCall('GET', `/admin/messenger/numbers/${OLD.phoneNumberId}`);
  const fingerprint = (v: string) => 'hmac-sha256:' + createHmac('sha256', deriveKey(master, 'messenger-credential-fingerprint')).update(v).digest('hex').slice(0, 16);
  t.same(shown.credentials, { accessToken: fingerprint(OLD.accessToken), appSecret: fingerprint(OLD.appSecret), verifyToken: fingerprint(OLD.verifyToken) });
  const r = await api(d, legacy.token).send({ to: newNumber(), type: 'template', template: { name: 'hello_world', language: 'en_US' } });
  t.equal(r.status, 200, r.text);
  const s = await statusUntil(d, legacy.token, r.json.data.messageId, (x) => x.status === 'read', 20_000);
  t.equal(s.status, 'read', "the platform took the number's token, and its statuses verified with the number's app secret");
  t.equal(messengerOf(d).simulator!.sent.at(-1)?.from, OLD.phoneNumberId, 'sent from the old number');
  const verify = await fetch(`${d.api}/v1/messenger/webhook?hub.mode=subscribe&hub.verify_token=${OLD.verifyToken}&hub.challenge=c123`);
  t.equal(await verify.text(), 'c123', "the number's verify token still answers the handshake");

  // The credential store's admin view: fingerprints, never a value.
  const held = await d.adminCall('GET', '/admin/credentials?account=legacy');
  t.same(
    held.credentials.map((c: any) => [c.module, c.name, c.fingerprint, c.version]),
    (['accessToken', 'appSecret', 'verifyToken'] as const).map((s) => ['messenger', `number:${OLD.phoneNumberId}:${s}`, fingerprint(OLD[s]), 1]),
  );
  for (const v of [OLD.accessToken, OLD.appSecret, OLD.verifyToken]) t.notOk(JSON.stringify(held).includes(v), 'no value in the answer');
  t.same((await d.adminCall('GET', '/admin/credentials?account=legacy&module=push')).credentials, [], 'one module only');
  await t.rejects(d.adminCall('GET', '/admin/credentials?account=nobody'), { code: 'ACCOUNT_NOT_FOUND' });
});
