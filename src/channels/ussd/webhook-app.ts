import { createHmac } from 'node:crypto';
import { GuardedHttpError, type GuardedHttp } from '../../security/guarded-http.js';
import { signatureHeader } from '../../security/standard-webhooks-signature.js';
import type { TargetGuard } from '../../security/target-guard.js';
import { newId } from '../../util/ids.js';
import type { AppDialect } from './menu-tree.js';
import type { AppReply, HopContext } from './menu-engine.js';

/** Bytes of an app's answer read at most: a screen is 182 characters, this leaves room for JSON and whitespace. */
const MAX_ANSWER_BYTES = 8 * 1024;

/** Why an app's answer could not be used; the session ends with the apology and this as its error. */
export class AppError extends Error {
  override readonly name = 'AppError';
  constructor(
    readonly code: 'APP_TIMEOUT' | 'APP_UNREACHABLE' | 'APP_HTTP_STATUS' | 'APP_MALFORMED' | 'APP_URL_REFUSED',
    message: string,
  ) {
    super(message);
  }
}

/** `CON …` / `END …` as Africa's Talking apps answer (the word, then a space or a line break, then the screen). */
export function parseConEnd(body: string): AppReply | null {
  const m = /^\s*(CON|END)(?:[ \r\n]|$)([\s\S]*)$/.exec(body);
  if (!m) return null;
  return { end: m[1] === 'END', text: m[2].replace(/\r\n/g, '\n').replace(/\s+$/, '') };
}

/** An app's answer: CON/END text, or (JSON dialect) `{"end": boolean, "text": "…"}`. */
export function parseAppAnswer(body: string, contentType: string | undefined): AppReply | null {
  if (contentType?.includes('json')) {
    try {
      const j = JSON.parse(body) as { end?: unknown; text?: unknown };
      if (typeof j.text === 'string' && typeof j.end === 'boolean') return { end: j.end, text: j.text };
    } catch {
      /* not JSON after all: try the text form */
    }
  }
  return parseConEnd(body);
}

/** The body of one hop in a dialect: Africa's Talking's form fields (text = every input joined by *), or JSON. */
export function hopBody(dialect: AppDialect, hop: HopContext): { body: string; contentType: string } {
  const text = hop.inputs.join('*');
  if (dialect === 'africastalking') {
    const form = new URLSearchParams({ sessionId: hop.sessionId, serviceCode: hop.serviceCode, phoneNumber: hop.phone, networkCode: hop.networkCode, text });
    return { body: form.toString(), contentType: 'application/x-www-form-urlencoded' };
  }
  const body = JSON.stringify({
    sessionId: hop.sessionId,
    serviceCode: hop.serviceCode,
    phoneNumber: hop.phone,
    networkCode: hop.networkCode,
    text,
    inputs: hop.inputs,
    input: hop.inputs.length ? hop.inputs[hop.inputs.length - 1] : null,
  });
  return { body, contentType: 'application/json' };
}

/** The signing secret of an account's USSD apps: derived, so it is never stored; the same on every instance. */
export function appSigningSecret(key: Buffer, accountId: string): string {
  return 'whsec_' + createHmac('sha256', key).update(`ussd-app:${accountId}`).digest().subarray(0, 24).toString('base64');
}

/**
 * POSTs hops to customers' apps through the guarded client (every address of the name checked, the connection to a
 * checked one, no redirects, the answer bounded), signed like webhooks (webhook-id, webhook-timestamp,
 * webhook-signature), and a hard deadline for the whole exchange: the network will not wait longer, so a slow app is
 * an error, never a hang.
 */
export class WebhookAppClient {
  private readonly http: GuardedHttp;

  constructor(
    private readonly o: { guard: TargetGuard; timeoutMs: number; signingKey: Buffer; clock?: () => number },
  ) {
    this.http = o.guard.client({ agent: { keepAlive: true, timeout: 4000, maxSockets: 256 } });
  }

  async ask(accountId: string, url: string, dialect: AppDialect, hop: HopContext): Promise<AppReply> {
    const checked = await this.o.guard.check(url);
    if (!checked.ok) throw new AppError('APP_URL_REFUSED', `app URL refused: ${checked.reason}`);
    const { body, contentType } = hopBody(dialect, hop);
    const id = newId('evt_');
    const timestamp = Math.floor((this.o.clock ?? Date.now)() / 1000);
    const headers: Record<string, string> = {
      'content-type': contentType,
      accept: 'text/plain, application/json',
      'user-agent': 'Ferry-USSD',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([appSigningSecret(this.o.signingKey, accountId)], id, timestamp, body),
    };
    const { status, text, type } = await this.post(checked.url, headers, body);
    if (status < 200 || status > 299) throw new AppError('APP_HTTP_STATUS', `the app answered HTTP ${status}`);
    const reply = parseAppAnswer(text, type);
    if (!reply) throw new AppError('APP_MALFORMED', 'the app answered neither CON nor END');
    return reply;
  }

  private async post(url: URL, headers: Record<string, string>, body: string): Promise<{ status: number; text: string; type?: string }> {
    try {
      const res = await this.http.request(url, { method: 'POST', headers, body, timeoutMs: this.o.timeoutMs, maxBytes: MAX_ANSWER_BYTES });
      return { status: res.status, text: res.body.toString('utf8'), type: res.headers['content-type'] };
    } catch (err) {
      if (!(err instanceof GuardedHttpError)) throw err;
      switch (err.kind) {
        case 'TIMEOUT':
          throw new AppError('APP_TIMEOUT', `the app did not answer within ${this.o.timeoutMs} ms`);
        case 'TOO_LARGE':
          throw new AppError('APP_MALFORMED', `the answer is over ${MAX_ANSWER_BYTES} bytes`);
        case 'TARGET_BLOCKED':
        case 'INVALID_URL':
          throw new AppError('APP_URL_REFUSED', `app URL refused: ${err.message}`);
        default:
          throw new AppError('APP_UNREACHABLE', `the app could not be reached: ${err.message}`);
      }
    }
  }

  close(): void {
    this.http.close();
  }
}
