import { randomBytes } from 'node:crypto';
import t from 'tap';
import { SecretCipher } from '../../src/security/cipher.js';

const k1 = randomBytes(32);
const k2 = randomBytes(32);

t.test('round trip, with a fresh IV every time', async (t) => {
  const c = new SecretCipher({ current: { id: 'k1', key: k1 } });
  for (const plain of ['', 'pw', 'pässwörd ✓ 🔑', 'x'.repeat(5000)]) t.equal(c.decrypt(c.encrypt(plain)), plain);
  const a = c.encrypt('same');
  const b = c.encrypt('same');
  t.not(a, b, 'the same plaintext encrypts differently');
  const [keyId, iv, tag, ct] = a.split(':');
  t.equal(keyId, 'k1');
  t.equal(Buffer.from(iv, 'base64').length, 12);
  t.equal(Buffer.from(tag, 'base64').length, 16);
  t.ok(ct.length > 0);
  t.notMatch(a, /same/, 'no plaintext in the ciphertext');
});

t.test('tampering is detected', async (t) => {
  const c = new SecretCipher({ current: { id: 'k1', key: k1 } });
  const value = c.encrypt('secret-pw');
  const [keyId, iv, tag, ct] = value.split(':');
  const flip = (b64: string) => {
    const b = Buffer.from(b64, 'base64');
    b[0] ^= 1;
    return b.toString('base64');
  };
  t.throws(() => c.decrypt([keyId, iv, tag, flip(ct)].join(':')), /failed authentication/, 'altered ciphertext');
  t.throws(() => c.decrypt([keyId, iv, flip(tag), ct].join(':')), /failed authentication/, 'altered tag');
  t.throws(() => c.decrypt([keyId, flip(iv), tag, ct].join(':')), /failed authentication/, 'altered IV');
  t.throws(() => c.decrypt('garbage'), /not a ciphertext/);
  t.throws(() => c.decrypt([keyId, iv, tag].join(':')), /not a ciphertext/);
  // Relabelling to another known key id fails too (the id is authenticated, and the key differs).
  const both = new SecretCipher({ current: { id: 'k1', key: k1 }, others: [{ id: 'k2', key: k1 }] });
  t.throws(() => both.decrypt(['k2', iv, tag, ct].join(':')), /failed authentication/, 'key id is bound to the ciphertext');
  const wrongKey = new SecretCipher({ current: { id: 'k1', key: k2 } });
  t.throws(() => wrongKey.decrypt(value), /failed authentication/, 'another key under the same id');
  t.throws(() => c.decrypt(value.replace(/^k1/, 'k9')), /k9, which is not configured/);
  try {
    c.decrypt([keyId, iv, tag, flip(ct)].join(':'));
  } catch (err) {
    t.notMatch((err as Error).message, /secret-pw/, 'errors never carry the plaintext');
  }
});

t.test('rotation: old ciphertexts still decrypt after the current key changes', async (t) => {
  const before = new SecretCipher({ current: { id: 'k1', key: k1 } });
  const old = before.encrypt('old-pw');
  const after = new SecretCipher({ current: { id: 'k2', key: k2 }, others: [{ id: 'k1', key: k1 }] });
  t.equal(after.decrypt(old), 'old-pw', 'old value readable with the old key kept');
  const fresh = after.encrypt('new-pw');
  t.match(fresh, /^k2:/, 'new values use the current key');
  t.ok(after.isStale(old));
  t.notOk(after.isStale(fresh));
  t.throws(() => before.decrypt(fresh), /k2, which is not configured/, 'the old cipher cannot read the new key');
  const dropped = new SecretCipher({ current: { id: 'k2', key: k2 } });
  t.throws(() => dropped.decrypt(old), /not configured/, 'once the old key is dropped, its values are unreadable');

  const fromMap = new SecretCipher(
    new Map([
      ['k2', k2],
      ['k1', k1],
    ]),
  );
  t.equal(fromMap.currentKeyId, 'k2', 'a Map’s first entry is current');
  t.equal(fromMap.decrypt(old), 'old-pw');
  t.equal(fromMap.decrypt(fresh), 'new-pw');
});

t.test('bad keys are refused', async (t) => {
  t.throws(() => new SecretCipher({ current: { id: 'k', key: randomBytes(16) } }), /32 bytes/);
  t.throws(() => new SecretCipher({ current: { id: 'a:b', key: k1 } }), /key id/);
  t.throws(() => new SecretCipher(new Map()), /at least one key/);
  t.throws(() => new SecretCipher({ current: { id: 'k', key: k1 }, others: [{ id: 'k', key: k2 }] }), /twice/);
  t.match(SecretCipher.keyIdOf(k1), /^[0-9a-f]{12}$/);
  t.equal(SecretCipher.keyIdOf(k1), SecretCipher.keyIdOf(Buffer.from(k1)), 'stable');
  t.not(SecretCipher.keyIdOf(k1), SecretCipher.keyIdOf(k2));
});
