import { deriveKey } from '../security/secrets.js';

/**
 * Purposes derived before keys were scoped per module, named without the module's prefix. Their bytes cannot change
 * (codes, secrets and ciphertexts at rest were made with them), so they are kept as they are and owned by name here.
 */
export const LEGACY_PURPOSES: Readonly<Record<string, string>> = {
  'webhook-secret': 'webhooks',
  'upstream-password': 'sms',
  'message-body': 'sms',
};

/** Purposes of the core itself: never derived for a module. */
export const CORE_PURPOSES: ReadonlySet<string> = new Set(['api-secret']);

/**
 * `ctx.deriveKey` of one module: HMAC-SHA256(master, 'ferry:' + purpose), the derivation every key at rest was made
 * with (src/security/secrets.ts), so the bytes are today's. Scoping is a check, not a prefix in the derivation (which
 * would change every key): a module derives `<module>-…` purposes, or a legacy purpose it owns; anything else
 * (another module's purpose, the core's) throws.
 */
export function moduleKeyDeriver(master: Buffer, module: string): (purpose: string) => Buffer {
  return (purpose) => {
    const owner = LEGACY_PURPOSES[purpose];
    const own = owner === undefined ? purpose.startsWith(`${module}-`) && purpose.length > module.length + 1 : owner === module;
    if (CORE_PURPOSES.has(purpose) || !own) {
      throw new Error(`module ${module} may not derive the key ${JSON.stringify(purpose)}: a module's purposes are named ${module}-<purpose>`);
    }
    return deriveKey(master, purpose);
  };
}
