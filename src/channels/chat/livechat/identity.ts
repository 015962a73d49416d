import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** An anonymous visitor's key as the widget keeps it (localStorage); a secret of the visitor's browser. */
export const VISITOR_KEY_PATTERN = '^v_[A-Za-z0-9_-]{22,64}$';
const VISITOR_KEY = new RegExp(VISITOR_KEY_PATTERN);

/** Anonymous visitors' chat user ids start with this; an identified visitor is the customer's own user id. */
export const VISITOR_USER_PREFIX = 'visitor:';
/** Agents' chat user ids: `agent:<keyId>` (the key that signed in to /inbox). */
export const AGENT_USER_PREFIX = 'agent:';

export const agentUserId = (keyId: string) => `${AGENT_USER_PREFIX}${keyId}`;

/**
 * The secrets of live chat, all derived from one module key (ctx.deriveKey('chat-widget')): nothing secret is stored.
 * - an inbox's identity secret: HMAC(key, account, inbox, generation); rotating moves the generation;
 * - an anonymous visitor's user id: HMAC(key, account, the visitor's key), so the id shown to agents and in webhooks
 *   cannot be turned back into the key that speaks as the visitor;
 * - the inbox page's CSRF key.
 */
export class LivechatSecrets {
  constructor(private readonly key: Buffer) {}

  private mac(label: string): Buffer {
    return createHmac('sha256', this.key).update(label).digest();
  }

  identitySecret(accountId: string, inboxId: string, generation: number): string {
    return `lcis_${this.mac(`identity:${accountId}:${inboxId}:${generation}`).toString('base64url')}`;
  }

  /**
   * Whether `hmacHex` is HMAC-SHA256(identity secret, userId) in hex, compared in constant time: what the customer's
   * server computes, e.g. `crypto.createHmac('sha256', secret).update(userId).digest('hex')`.
   */
  identityValid(secret: string, userId: string, hmacHex: string): boolean {
    if (!/^[0-9a-fA-F]{64}$/.test(hmacHex)) return false;
    const want = createHmac('sha256', secret).update(userId).digest();
    return timingSafeEqual(want, Buffer.from(hmacHex, 'hex'));
  }

  visitorUserId(accountId: string, visitorKey: string): string {
    return `${VISITOR_USER_PREFIX}${this.mac(`visitor:${accountId}:${visitorKey}`).toString('base64url').slice(0, 22)}`;
  }

  csrfKey(): Buffer {
    return this.mac('inbox-csrf');
  }
}

export function isVisitorKey(s: unknown): s is string {
  return typeof s === 'string' && VISITOR_KEY.test(s);
}

export function newVisitorKey(): string {
  return `v_${randomBytes(24).toString('base64url')}`;
}

export function newWidgetKey(): string {
  return `wk_${randomBytes(18).toString('base64url')}`;
}
