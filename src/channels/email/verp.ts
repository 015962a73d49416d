import { createHmac, timingSafeEqual } from 'node:crypto';

// b+<messageId>-<tag>@<bounceDomain>: the tag is an HMAC of the message id, so only Ferry can make an address that
// names a message. Lower-case hex, since some MTAs fold the case of local parts.
const SIGNED = /^b\+([a-z]{2,8}_[0-9a-z]{10,40})-([0-9a-f]{12})@(.+)$/i;
const TAG_HEX = 12;
const UNSIGNED = /^b\+[a-z]{2,8}_[0-9a-z]{10,40}@/i;

/** Why a bounce-domain recipient names no message: not a VERP address, the unsigned form, or a wrong tag. */
export type VerpRefusal = 'not_verp' | 'unsigned' | 'bad_signature';

/**
 * Signed VERP return paths. Without the tag anyone who knew a message id (it is in the API, webhooks, headers a
 * recipient forwards) could mail a forged DSN to b+<id>@… and suppress that recipient. The tag (48 bits of
 * HMAC-SHA256 under a key derived from the daemon's secret) makes such a forgery a blind guess per message.
 */
export class VerpSigner {
  constructor(
    private readonly key: Buffer,
    readonly bounceDomain: string,
  ) {}

  /** The return path of a message: bounces to it name the message. */
  address(messageId: string): string {
    return `b+${messageId}-${this.tag(messageId)}@${this.bounceDomain}`;
  }

  /** Parses a recipient: the message it names, or why it names none (the old unsigned form is refused too). */
  check(address: string): { messageId: string } | { refused: VerpRefusal } {
    const at = address.lastIndexOf('@');
    if (at < 0 || address.slice(at + 1).toLowerCase() !== this.bounceDomain.toLowerCase()) return { refused: 'not_verp' };
    const m = SIGNED.exec(address);
    if (!m) return { refused: UNSIGNED.test(address) ? 'unsigned' : 'not_verp' };
    const id = m[1].toLowerCase();
    const want = Buffer.from(this.tag(id), 'hex');
    const got = Buffer.from(m[2].toLowerCase(), 'hex');
    return got.length === want.length && timingSafeEqual(got, want) ? { messageId: id } : { refused: 'bad_signature' };
  }

  /** The message id a signed address of this bounce domain names, or null. */
  messageId(address: string): string | null {
    const r = this.check(address);
    return 'messageId' in r ? r.messageId : null;
  }

  private tag(messageId: string): string {
    return createHmac('sha256', this.key).update(messageId.toLowerCase()).digest('hex').slice(0, TAG_HEX);
  }
}
