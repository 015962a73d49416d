import { createHmac, timingSafeEqual } from 'node:crypto';
import { isbot } from 'isbot';

export type TrackKind = 'o' | 'c' | 'u';

/** What a valid token names. */
export interface TrackToken {
  kind: TrackKind;
  messageId: string;
  /** The link of a click token. */
  url?: string;
}

const MAC_BYTES = 16;

/**
 * HMAC-signed tokens of the public tracking addresses (open pixel, click redirect, one-click unsubscribe). The token
 * carries what it names (kind, message id, link) and a MAC over it with a key derived for tracking only: a forged or
 * altered token does not verify and counts nothing.
 */
export class TrackingTokens {
  constructor(private readonly key: Buffer) {}

  sign(t: TrackToken): string {
    const body = Buffer.from(JSON.stringify([t.kind, t.messageId, t.url ?? null])).toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  /** The token's content, or null when it is malformed or its MAC does not match. */
  verify(token: string, kind: TrackKind): TrackToken | null {
    const dot = token.indexOf('.');
    if (dot <= 0 || token.length > 8192) return null;
    const body = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    const want = Buffer.from(this.mac(body), 'base64url');
    if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
    try {
      const [k, messageId, url] = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as [string, string, string | null];
      if (k !== kind || typeof messageId !== 'string') return null;
      return { kind, messageId, ...(url ? { url } : {}) };
    } catch {
      return null;
    }
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(body).digest().subarray(0, MAC_BYTES).toString('base64url');
  }
}

/** Image proxies and link scanners that fetch mail content on their own: their opens are machine opens. */
const MACHINE_AGENTS = /GoogleImageProxy|YahooMailProxy|ggpht\.com|Outlook-iOS-Android|Mimecast|Barracuda|Proofpoint|ms-office|MicrosoftPreview|Apple-Mail-Privacy/i;

export function isMachineOpen(userAgent: string | undefined): boolean {
  if (!userAgent) return true;
  return MACHINE_AGENTS.test(userAgent) || isbot(userAgent);
}

/** The HTML of one recipient's message with its open pixel and tracked links. */
export function trackHtml(html: string, o: { base: string; tokens: TrackingTokens; messageId: string; opens: boolean; clicks: boolean }): string {
  let out = html;
  if (o.clicks) {
    out = out.replace(/(<a\b[^>]*?\bhref\s*=\s*)(["'])(https?:\/\/[^"']+)\2/gi, (_m, pre: string, q: string, url: string) => {
      const decoded = url.replace(/&amp;/g, '&');
      return `${pre}${q}${o.base}/v1/email/t/c/${o.tokens.sign({ kind: 'c', messageId: o.messageId, url: decoded })}${q}`;
    });
  }
  if (o.opens) {
    const pixel = `<img src="${o.base}/v1/email/t/o/${o.tokens.sign({ kind: 'o', messageId: o.messageId })}" width="1" height="1" alt="" style="display:none">`;
    out = /<\/body>/i.test(out) ? out.replace(/<\/body>/i, `${pixel}</body>`) : out + pixel;
  }
  return out;
}
