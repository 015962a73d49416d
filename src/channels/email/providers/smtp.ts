import { createPrivateKey, type KeyObject } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import type { OutboundJob, ProviderAdapter, SendResult } from '../../../outbound/index.js';
import type { RateWindows } from '../../../store/types.js';
import type { EmailContent, EmailJobPayload } from '../email-content.js';
import { classifySmtpError } from './smtp-errors.js';

export interface SmtpAdapterOptions {
  /** smtp://user:pass@host:port (STARTTLS when the server offers it) or smtps:// (TLS from the start). */
  url: string;
  maxConnections: number;
  /** The message's signed VERP return path (verp.ts): bounces to it name the message. */
  returnPath(messageId: string): string;
  /** Cluster-wide limits (RateWindows: Redis or in-process): per relay and per account, messages per second; 0 = none. */
  windows: RateWindows;
  relayPerSecond: number;
  accountPerSecond: number;
  /** The stored content of a send. */
  content(sendId: string): Promise<EmailContent>;
  /** The DKIM key of an account's sending domain, or null (unsigned). */
  dkim(accountId: string, domain: string): Promise<{ selector: string; privateKey: string } | null>;
  /** Extra headers and body rewriting for one recipient (tracking, List-Unsubscribe). */
  decorate?(job: OutboundJob<EmailJobPayload>, content: EmailContent): { headers: Record<string, string>; html?: string };
  /** Accept a self-signed certificate (the simulator, tests). */
  insecureTls?: boolean;
}

/**
 * The SMTP relay adapter: one nodemailer connection pool per instance, each recipient one message with its own VERP
 * envelope sender, signed with its sending domain's DKIM key. Speaks SMTP and nothing else: the reply is classified by
 * the one table (smtp-errors.ts). The throttle is Ferry's own, cluster-wide, taken before a message goes out.
 */
export class SmtpAdapter implements ProviderAdapter<EmailJobPayload> {
  /** The provider's name in the outbound pipeline. */
  static readonly providerName = 'smtp';
  readonly name = SmtpAdapter.providerName;
  private readonly transport: Transporter;
  private readonly endpoint: string;

  constructor(private readonly o: SmtpAdapterOptions) {
    const u = new URL(o.url);
    this.endpoint = `${u.hostname}:${u.port || (u.protocol === 'smtps:' ? 465 : 587)}`;
    this.transport = nodemailer.createTransport({
      pool: true,
      host: u.hostname,
      port: Number(u.port || (u.protocol === 'smtps:' ? 465 : 587)),
      secure: u.protocol === 'smtps:',
      auth: u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined,
      maxConnections: o.maxConnections,
      maxMessages: 1000,
      tls: o.insecureTls ? { rejectUnauthorized: false } : undefined,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
  }

  endpointOf(): string {
    return this.endpoint;
  }

  async send(job: OutboundJob<EmailJobPayload>, signal: AbortSignal): Promise<SendResult> {
    const throttle = await this.throttle(job.accountId);
    if (throttle) return throttle;
    const p = job.payload;
    const content = p.content ?? (await this.o.content(p.sendId));
    const dkim = await this.o.dkim(job.accountId, p.domain);
    const extra = this.o.decorate?.(job, content) ?? { headers: {} };
    if (signal.aborted) return { kind: 'retry', code: 'PROVIDER_TIMEOUT', message: 'aborted before sending' };
    try {
      const info = await this.transport.sendMail({
        envelope: { from: this.o.returnPath(job.messageId), to: [p.rcpt] },
        from: content.fromName ? { name: content.fromName, address: content.from } : content.from,
        to: content.to,
        cc: content.cc.length ? content.cc : undefined,
        replyTo: content.replyTo,
        subject: content.subject,
        html: extra.html ?? content.html,
        text: content.text,
        messageId: `<${job.messageId}@${p.domain}>`,
        headers: { ...content.headers, ...extra.headers, 'X-Ferry-Message-Id': job.messageId },
        attachments: content.attachments.map((a) => ({ filename: a.filename, content: Buffer.from(a.content, 'base64'), contentType: a.contentType })),
        // A parsed KeyObject (crypto's sign takes one): the PEM is not parsed again for every message.
        dkim: dkim ? { domainName: p.domain, keySelector: dkim.selector, privateKey: this.keyObject(dkim.privateKey) as unknown as string } : undefined,
      });
      return { kind: 'sent', providerId: String(info.response ?? '250').slice(0, 200) };
    } catch (err) {
      return classifySmtpError(err);
    }
  }

  private readonly keys = new Map<string, KeyObject>();

  private keyObject(pem: string): KeyObject {
    let k = this.keys.get(pem);
    if (!k) {
      k = createPrivateKey(pem);
      if (this.keys.size > 1000) this.keys.clear();
      this.keys.set(pem, k);
    }
    return k;
  }

  private async throttle(accountId: string): Promise<SendResult | null> {
    const entries = [];
    if (this.o.relayPerSecond > 0) entries.push({ key: `email:relay:{${this.endpoint}}`, limits: { second: this.o.relayPerSecond } });
    if (this.o.accountPerSecond > 0) entries.push({ key: `email:account:{${accountId}}`, limits: { second: this.o.accountPerSecond } });
    for (const e of entries) {
      // One key per call: the relay and the account keys live on different Redis slots.
      const r = await this.o.windows.take(e.key, e.limits);
      if (!r.allowed) {
        const relay = e.key.startsWith('email:relay');
        return relay
          ? { kind: 'retry', throttled: true, retryAfterMs: r.retryAfterMs, code: 'RELAY_THROTTLED', message: `relay limit ${r.limit}/s` }
          : { kind: 'retry', providerHealthy: true, retryAfterMs: r.retryAfterMs, code: 'ACCOUNT_THROTTLED', message: `account limit ${r.limit}/s` };
      }
    }
    return null;
  }

  close(): void {
    this.transport.close();
  }
}
