import { SecretCipher } from '../../security/cipher.js';
import { deriveKey } from '../../security/secrets.js';

/** A config value that holds a credential encrypted with the daemon's key: `sealed:<ciphertext>`. */
export const SEALED_PREFIX = 'sealed:';
export const CREDENTIALS_KEY_PURPOSE = 'messenger-credentials';

/**
 * The cipher of messenger credentials: AES-256-GCM under the key derived for CREDENTIALS_KEY_PURPOSE (the module gets it
 * from ctx.deriveKey; it is also the messenger module's credential-store key, src/security/credential-store.ts).
 */
export function credentialsCipherOf(key: Buffer): SecretCipher {
  return new SecretCipher({ current: { id: SecretCipher.keyIdOf(key), key } });
}

/** The same cipher from the master key, for `ferry messenger seal` (the operator's tool holds the master; modules never do). */
export function credentialsCipher(master: Buffer): SecretCipher {
  return credentialsCipherOf(deriveKey(master, CREDENTIALS_KEY_PURPOSE));
}

/** `ferry messenger seal`: what goes into the config instead of the plain value. */
export function seal(cipher: SecretCipher, plain: string): string {
  return SEALED_PREFIX + cipher.encrypt(plain);
}

/** A config value, opened when sealed; a sealed value this key cannot open is an error naming the setting. */
export function unseal(cipher: SecretCipher, setting: string, value: string): string {
  if (!value.startsWith(SEALED_PREFIX)) return value;
  try {
    return cipher.decrypt(value.slice(SEALED_PREFIX.length));
  } catch {
    throw new Error(`messenger.${setting} is sealed with another key (security.secretKey or dataDir/secret.key differ from where it was sealed)`);
  }
}
