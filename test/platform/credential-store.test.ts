// ctx.credentials: per (account, module, name), sealed at rest under the module's derived key, fingerprints only in
// views, a rotation keeps the previous value readable for its grace period, one module never reads another's.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { CredentialStore } from '../../src/security/credential-store.js';
import { moduleKeyDeriver } from '../../src/platform/module-keys.js';
import { testDb } from '../helpers/db.js';

t.test('credential store', async (t) => {
  const { db, cleanup } = await testDb();
  t.teardown(cleanup);
  const master = randomBytes(32);
  let now = 1_800_000_000_000;
  const storeOf = (module: string) => {
    const key = moduleKeyDeriver(master, module);
    return new CredentialStore({ db, module, sealKey: key(`${module}-credentials`), fingerprintKey: key(`${module}-credential-fingerprint`), clock: () => now });
  };
  const push = storeOf('push');
  const voice = storeOf('voice');

  const put = await push.put('acc_1', 'apns:key', 'secret-apns-key-0123456789');
  t.match(put, { accountId: 'acc_1', name: 'apns:key', version: 1, fingerprint: /^hmac-sha256:[0-9a-f]{16}$/, previous: null });
  t.equal(put.fingerprint, push.fingerprint('secret-apns-key-0123456789'));
  t.not(voice.fingerprint('secret-apns-key-0123456789'), put.fingerprint, 'fingerprints are keyed per module');
  t.equal(await push.get('acc_1', 'apns:key'), 'secret-apns-key-0123456789');
  t.equal(await push.get('acc_2', 'apns:key'), null, 'per account');
  t.equal(await voice.get('acc_1', 'apns:key'), null, "another module's credential is not readable");
  const { rows } = await db.query<Record<string, unknown>>(`SELECT * FROM provider_credentials`);
  t.notOk(JSON.stringify(rows).includes('secret-apns-key'), 'sealed at rest');
  t.notOk(JSON.stringify(await push.list('acc_1')).includes('secret-apns-key'), 'a view holds fingerprints only');

  now += 1000;
  const rotated = await push.rotate('acc_1', 'apns:key', 'new-apns-key-0123456789', 60_000);
  t.match(rotated, { version: 2, fingerprint: push.fingerprint('new-apns-key-0123456789'), previous: { fingerprint: put.fingerprint, until: new Date(now + 60_000).toISOString() } });
  t.equal(await push.get('acc_1', 'apns:key'), 'new-apns-key-0123456789');
  t.match(await push.open({ accountId: 'acc_1' }), [{ name: 'apns:key', value: 'new-apns-key-0123456789', previous: 'secret-apns-key-0123456789', version: 2 }], 'the previous value is readable during the grace period');
  now += 60_001;
  t.match(await push.open({ accountId: 'acc_1' }), [{ value: 'new-apns-key-0123456789', previous: null }], 'and not after it');
  t.equal(await push.rotate('acc_1', 'nothing', 'x'), null, 'a rotation needs a credential');
  t.equal((await push.put('acc_1', 'apns:key', 'replaced')).version, 3, 'put over an existing one replaces it without grace');

  await push.put('acc_1', 'fcm:a_b', 'fcm-1');
  await push.put('acc_1', 'fcmXa', 'not-under-the-prefix');
  await push.put('acc_2', 'fcm:x', 'fcm-2');
  t.same((await push.open({ prefix: 'fcm:a_' })).map((c) => c.name), ['fcm:a_b'], 'a prefix is literal (_ and % are not patterns)');
  t.same((await push.open({ prefix: 'fcm:' })).map((c) => `${c.accountId} ${c.name}`), ['acc_1 fcm:a_b', 'acc_2 fcm:x'], 'across accounts');
  t.same((await push.list('acc_1', 'fcm')).map((c) => c.name), ['fcm:a_b', 'fcmXa']);
  // In the caller's transaction: a rollback takes the credential back with the rest.
  await db.tx(async (q) => {
    await push.put('acc_3', 'k', 'v', q);
    throw new Error('rolled back');
  }).catch(() => undefined);
  t.equal(await push.get('acc_3', 'k'), null);
  t.equal(await push.remove('acc_1', { prefix: 'fcm:' }), 1);
  t.equal(await push.remove('acc_1', { name: 'apns:key' }), 1);
  t.same((await push.list('acc_1')).map((c) => c.name), ['fcmXa']);
  t.equal(await push.remove('acc_2'), 1, "all of an account's");
});
