// A module gets derived keys, never the master: the bytes are those every key at rest was made with (OTP codes, webhook
// secrets, sealed messenger credentials still open), and a module derives only its own purposes.
import { createHmac, randomBytes } from 'node:crypto';
import t from 'tap';
import { credentialsCipher, credentialsCipherOf, CREDENTIALS_KEY_PURPOSE, seal, unseal } from '../../src/channels/messenger/sealed-credentials.js';
import { moduleKeyDeriver } from '../../src/platform/module-keys.js';
import { SecretCipher } from '../../src/security/cipher.js';
import { deriveKey } from '../../src/security/secrets.js';

const master = randomBytes(32);
/** The derivation as it was written before the context lost masterKey, spelled out here so a change to it fails. */
const before = (purpose: string) => createHmac('sha256', master).update('ferry:' + purpose).digest();
const cipherOf = (key: Buffer) => new SecretCipher({ current: { id: SecretCipher.keyIdOf(key), key } });

t.test('the derived bytes are unchanged for every purpose a module used', async (t) => {
  const used: Array<[module: string, purpose: string]> = [
    ['otp', 'otp-code'],
    ['otp', 'otp-hash'],
    ['webhooks', 'webhook-secret'],
    ['messenger', 'messenger-credentials'],
    ['messenger', 'messenger-credential-fingerprint'],
    ['messenger', 'messenger-access-token'],
    ['email', 'email-dkim'],
    ['ussd', 'ussd-app-signing'],
    ['shortlink', 'shortlink-cookie'],
    ['logs', 'logs-page-csrf'],
    ['sms', 'upstream-password'],
    ['sms', 'message-body'],
  ];
  for (const [module, purpose] of used) t.same(moduleKeyDeriver(master, module)(purpose), before(purpose), `${module}: ${purpose}`);
});

t.test('a value sealed the old way opens the new way', async (t) => {
  // OTP codes at rest: the service was given the master and derived 'otp-code' itself; now it is given the key.
  const otpOld = cipherOf(deriveKey(master, 'otp-code')).encrypt('482913');
  t.equal(cipherOf(moduleKeyDeriver(master, 'otp')('otp-code')).decrypt(otpOld), '482913', 'an OTP code');
  // Webhook signing secrets: same.
  const secretOld = cipherOf(deriveKey(master, 'webhook-secret')).encrypt('whsec_abc');
  t.equal(cipherOf(moduleKeyDeriver(master, 'webhooks')('webhook-secret')).decrypt(secretOld), 'whsec_abc', 'a webhook secret');
  // Messenger credentials: `ferry messenger seal` (from the master) and the module (from its derived key) agree.
  const sealedOld = seal(credentialsCipher(master), 'EAAG-token');
  const moduleCipher = credentialsCipherOf(moduleKeyDeriver(master, 'messenger')(CREDENTIALS_KEY_PURPOSE));
  t.equal(unseal(moduleCipher, 'accessToken', sealedOld), 'EAAG-token', 'a sealed messenger credential');
  t.throws(() => unseal(credentialsCipherOf(moduleKeyDeriver(randomBytes(32), 'messenger')(CREDENTIALS_KEY_PURPOSE)), 'accessToken', sealedOld), /messenger\.accessToken is sealed with another key/);
});

t.test("a module derives only its own purposes: another module's, the core's and bare names throw", async (t) => {
  t.throws(() => moduleKeyDeriver(master, 'shortlink')('otp-code'), /module shortlink may not derive the key "otp-code"/);
  t.throws(() => moduleKeyDeriver(master, 'otp')('webhook-secret'), /may not derive/, "a legacy purpose is its owner's only");
  t.throws(() => moduleKeyDeriver(master, 'webhooks')('api-secret'), /may not derive/, "the core's API key hash");
  t.throws(() => moduleKeyDeriver(master, 'sms')('sms-'), /may not derive/, 'a prefix with nothing after it');
  t.throws(() => moduleKeyDeriver(master, 'echo')('echoes-x'), /may not derive/, 'the name up to a dash, not a longer word');
  t.ok(moduleKeyDeriver(master, 'echo')('echo-x').equals(before('echo-x')));
});
