import type { Logger } from 'pino';
import type { NewEvent } from '../../events/event-outbox.js';
import type { ModuleEvents } from '../../platform/event-sink.js';
import './email-machine.js';
import type { OutboundPipeline, StateChange } from '../../outbound/index.js';
import type { Db, Queryable, Transaction } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { INLINE_CONTENT_BYTES, type EmailContent, type EmailJobPayload } from './email-content.js';
import { isHardBounce } from './providers/smtp-errors.js';
import { checkSyntax, render, TemplateRenderError, type Rendered } from './render.js';
import type { MailReport } from './report-parser.js';
import type { SendingDomains } from './sending-domains.js';
import type { TemplateStore } from './template-store.js';

export type Stream = 'transactional' | 'bulk';
export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';

export interface SendInput {
  from: string;
  fromName?: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo?: string;
  subject?: string;
  html?: string;
  text?: string;
  templateId?: string;
  data?: Record<string, unknown>;
  attachments: EmailContent['attachments'];
  headers: Record<string, string>;
  tags: string[];
  metadata: Record<string, unknown>;
  tracking: { opens: boolean; clicks: boolean };
  sendAt?: number;
  stream: Stream;
}

/** Why a send is refused before anything is stored. */
export class EmailSendError extends Error {
  constructor(
    readonly code: 'DOMAIN_NOT_FOUND' | 'DOMAIN_NOT_VERIFIED' | 'TEMPLATE_NOT_FOUND' | 'TEMPLATE_RENDER_ERROR',
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

export interface SentRecipient {
  to: string;
  messageId: string;
  status: 'queued' | 'dropped';
}

export interface MessageView {
  id: string;
  sendId: string;
  stream: Stream;
  from: string;
  to: string;
  subject: string;
  status: string;
  tags: string[];
  metadata: Record<string, unknown>;
  attempts: number;
  error: string | null;
  providerError: string | null;
  createdAt: string;
  updatedAt: string;
  history: Array<{ kind: string; status: string; at: string; detail: Record<string, unknown> | null }>;
}

export interface EmailServiceOptions {
  db: Db;
  log: Logger;
  /** ctx.events: email.* events in the transaction of the change. */
  events: ModuleEvents;
  domains: SendingDomains;
  templates: TemplateStore;
  pipeline: () => OutboundPipeline;
  requireVerifiedDomain: boolean;
  clock?: () => number;
}

interface MessageRow {
  id: string;
  account_id: string;
  send_id: string;
  stream: Stream;
  from_address: string;
  recipient: string;
  subject: string;
  status: string;
  tags: string[];
  metadata: Record<string, unknown>;
  job_id: string | null;
  created_at: string | number;
  updated_at: string | number;
}

const lower = (a: string) => a.trim().toLowerCase();

/**
 * The email product's rules: who may send from what, one message and one outbound job per recipient, suppressed
 * recipients dropped without a send, reports (DSN, ARF) and engagement applied to the right message under the one
 * state machine, and suppressions kept per stream.
 */
export class EmailService {
  private readonly clock: () => number;

  constructor(private readonly o: EmailServiceOptions) {
    this.clock = o.clock ?? Date.now;
  }

  /** The content of a send after templates are rendered; throws EmailSendError for an unknown template or variable. */
  async compose(accountId: string, input: Pick<SendInput, 'subject' | 'html' | 'text' | 'templateId' | 'data'>): Promise<Rendered> {
    try {
      if (input.templateId) {
        const t = await this.o.templates.get(accountId, input.templateId);
        if (!t) throw new EmailSendError('TEMPLATE_NOT_FOUND', `no template ${input.templateId}`, 'templateId');
        return render({ subject: input.subject ?? t.subject, html: t.html, text: t.text }, input.data ?? {});
      }
      return render({ subject: input.subject ?? '', html: input.html, text: input.text }, input.data ?? null);
    } catch (err) {
      if (err instanceof EmailSendError) throw err;
      if (err instanceof TemplateRenderError) throw new EmailSendError('TEMPLATE_RENDER_ERROR', err.message, input.templateId ? 'data' : err.part);
      throw err;
    }
  }

  /** Validates the sender, renders, stores the send and one message per recipient, and enqueues the jobs (one commit). */
  async send(accountId: string, input: SendInput): Promise<{ sendId: string; recipients: SentRecipient[] }> {
    const sender = await this.o.domains.forAddress(accountId, input.from);
    if (!sender) throw new EmailSendError('DOMAIN_NOT_FOUND', `${input.from.split('@')[1]} is not a sending domain of this account (POST /v1/email/domains)`, 'from');
    if (this.o.requireVerifiedDomain && !sender.verified) throw new EmailSendError('DOMAIN_NOT_VERIFIED', `the DKIM record of ${sender.domain} is not published yet`, 'from');
    const rendered = await this.compose(accountId, input);
    const content: EmailContent = {
      from: input.from,
      fromName: input.fromName,
      to: input.to,
      cc: input.cc,
      replyTo: input.replyTo,
      subject: rendered.subject,
      html: rendered.html,
      text: rendered.text,
      headers: input.headers,
      attachments: input.attachments,
    };
    const res = await this.store(accountId, sender.domain, [{ content, recipients: [...input.to, ...input.cc, ...input.bcc] }], input);
    return res[0];
  }

  /** The sending domain of an address of the account, under the same rules as a send. */
  async senderDomain(accountId: string, from: string): Promise<string> {
    const sender = await this.o.domains.forAddress(accountId, from);
    if (!sender) throw new EmailSendError('DOMAIN_NOT_FOUND', `${from.split('@')[1]} is not a sending domain of this account (POST /v1/email/domains)`, 'from');
    if (this.o.requireVerifiedDomain && !sender.verified) throw new EmailSendError('DOMAIN_NOT_VERIFIED', `the DKIM record of ${sender.domain} is not published yet`, 'from');
    return sender.domain;
  }

  /** Up to 1,000 personalizations of one template or body, each rendered with its own data; one transaction. */
  async bulk(
    accountId: string,
    base: Omit<SendInput, 'to' | 'cc' | 'bcc'>,
    personalizations: ReadonlyArray<{ to: string[]; cc?: string[]; data?: Record<string, unknown>; subject?: string }>,
  ): Promise<Array<{ sendId: string; recipients: SentRecipient[] }>> {
    const sender = await this.o.domains.forAddress(accountId, base.from);
    if (!sender) throw new EmailSendError('DOMAIN_NOT_FOUND', `${base.from.split('@')[1]} is not a sending domain of this account (POST /v1/email/domains)`, 'from');
    if (this.o.requireVerifiedDomain && !sender.verified) throw new EmailSendError('DOMAIN_NOT_VERIFIED', `the DKIM record of ${sender.domain} is not published yet`, 'from');
    const sends: Array<{ content: EmailContent; recipients: string[] }> = [];
    for (const [i, p] of personalizations.entries()) {
      let rendered: Rendered;
      try {
        rendered = await this.compose(accountId, { ...base, subject: p.subject ?? base.subject, data: { ...base.data, ...p.data } });
      } catch (err) {
        if (err instanceof EmailSendError && err.code === 'TEMPLATE_RENDER_ERROR') throw new EmailSendError(err.code, `personalizations[${i}]: ${err.message}`, `personalizations[${i}].data`);
        throw err;
      }
      const content: EmailContent = {
        from: base.from,
        fromName: base.fromName,
        to: p.to,
        cc: p.cc ?? [],
        replyTo: base.replyTo,
        subject: rendered.subject,
        html: rendered.html,
        text: rendered.text,
        headers: base.headers,
        attachments: base.attachments,
      };
      sends.push({ content, recipients: [...p.to, ...(p.cc ?? [])] });
    }
    return this.store(accountId, sender.domain, sends, base);
  }

  /** Throws when a template part is not valid Handlebars. */
  checkTemplate(t: { subject?: string | null; html?: string | null; text?: string | null }): void {
    checkSyntax(t);
  }

  /**
   * Stores sends (one content each, with its recipients) in one transaction: the email_sends rows, a message per
   * recipient, drops for suppressed ones (and their events), jobs for the rest; wakes the pipeline after the commit.
   */
  async store(
    accountId: string,
    domain: string,
    sends: ReadonlyArray<{ content: EmailContent; recipients: string[] }>,
    opts: Pick<SendInput, 'stream' | 'tags' | 'metadata' | 'tracking' | 'sendAt'> & { scheduleId?: string; now?: number },
  ): Promise<Array<{ sendId: string; recipients: SentRecipient[] }>> {
    const now = opts.now ?? this.clock();
    const pipeline = this.o.pipeline();
    const all = [...new Set(sends.flatMap((s) => s.recipients.map(lower)))];
    const { jobs, out, emitted } = await this.o.db.tx(async (q) => {
      const suppressed = await this.suppressedAmong(q, accountId, opts.stream, all);
      const out: Array<{ sendId: string; recipients: SentRecipient[] }> = [];
      const messages: unknown[][] = [[], [], [], [], [], []];
      const newJobs = [];
      const events: NewEvent[] = [];
      const sendRows: unknown[][] = [[], []];
      for (const s of sends) {
        const sendId = newId('send_', now);
        const json = JSON.stringify(s.content);
        const inline = json.length <= INLINE_CONTENT_BYTES ? { content: s.content } : {};
        sendRows[0].push(sendId);
        sendRows[1].push(json);
        const recipients: SentRecipient[] = [];
        for (const rcpt of [...new Set(s.recipients.map(lower))]) {
          const id = newId('em_', now);
          const dropped = suppressed.has(rcpt);
          recipients.push({ to: rcpt, messageId: id, status: dropped ? 'dropped' : 'queued' });
          messages[0].push(id);
          messages[1].push(sendId);
          messages[2].push(rcpt);
          messages[3].push(dropped ? 'dropped' : 'queued');
          messages[4].push(s.content.subject);
          messages[5].push(s.content.from);
          if (dropped) {
            events.push({ accountId, type: 'email.dropped', messageKey: id, data: { messageId: id, status: 'dropped', to: rcpt, reason: suppressed.get(rcpt), at: new Date(now).toISOString() } });
          } else {
            const payload: EmailJobPayload = { sendId, rcpt, domain, stream: opts.stream, trackOpens: opts.tracking.opens, trackClicks: opts.tracking.clicks, ...inline };
            newJobs.push({ product: 'email', provider: 'smtp', accountId, messageId: id, payload, priority: opts.stream === 'transactional', notBefore: opts.sendAt });
          }
        }
        out.push({ sendId, recipients });
      }
      await q.query(
        `INSERT INTO email_sends (id, account_id, content, created_at) SELECT u.id, $1, u.content::jsonb, $2 FROM unnest($3::text[], $4::text[]) AS u(id, content)`,
        [accountId, now, sendRows[0], sendRows[1]],
      );
      await q.query(
        `INSERT INTO email_messages (id, account_id, send_id, stream, from_address, recipient, subject, status, tags, metadata, created_at, updated_at, schedule_id)
         SELECT u.id, $1, u.send_id, $2, u.from_address, u.rcpt, u.subject, u.status, $3::jsonb, $4::jsonb, $5, $5, $12
         FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[]) AS u(id, send_id, rcpt, status, subject, from_address)`,
        [accountId, opts.stream, JSON.stringify(opts.tags), JSON.stringify(opts.metadata), now, ...messages, opts.scheduleId ?? null],
      );
      if (events.length) {
        await this.history(q, events.map((e) => ({ messageId: e.messageKey!, kind: 'dropped', detail: { reason: e.data.reason } })));
        await this.o.events.emit(q, events);
      }
      const jobs = newJobs.length ? await pipeline.enqueue(q, newJobs) : [];
      if (jobs.length) {
        await q.query(`UPDATE email_messages SET job_id = u.job FROM unnest($1::text[], $2::text[]) AS u(id, job) WHERE email_messages.id = u.id`, [
          jobs.map((j) => j.messageId),
          jobs.map((j) => j.id),
        ]);
      }
      return { jobs, out, emitted: events.length > 0 };
    });
    pipeline.wake(jobs);
    if (emitted) this.o.events.wake();
    return out;
  }

  private async suppressedAmong(q: Queryable, accountId: string, stream: Stream, addresses: string[]): Promise<Map<string, string>> {
    if (!addresses.length) return new Map();
    const { rows } = await q.query<{ address: string; reason: string }>(
      `SELECT address, reason FROM email_suppressions WHERE account_id = $1 AND stream = $2 AND address = ANY($3::text[])`,
      [accountId, stream, addresses],
    );
    return new Map(rows.map((r) => [r.address, r.reason]));
  }

  private async history(q: Queryable, rows: ReadonlyArray<{ messageId: string; kind: string; detail: Record<string, unknown> }>): Promise<void> {
    if (!rows.length) return;
    await q.query(`INSERT INTO email_events (message_id, kind, at, detail) SELECT u.id, u.kind, $1, u.detail::jsonb FROM unnest($2::text[], $3::text[], $4::text[]) AS u(id, kind, detail)`, [
      this.clock(),
      rows.map((r) => r.messageId),
      rows.map((r) => r.kind),
      rows.map((r) => JSON.stringify(r.detail)),
    ]);
  }

  /** The pipeline's onChange: the message row mirrors its job; a bounce, complaint or unsubscribe suppresses. */
  readonly onChange = async (q: Transaction, changes: readonly StateChange<EmailJobPayload>[]): Promise<void> => {
    const now = this.clock();
    await q.query(`UPDATE email_messages SET status = u.status, updated_at = $3 FROM unnest($1::text[], $2::text[]) AS u(id, status) WHERE email_messages.id = u.id`, [
      changes.map((c) => c.job.messageId),
      changes.map((c) => c.to),
      now,
    ]);
    const reasons: Record<string, SuppressionReason> = { bounced: 'hard_bounce', complained: 'complaint', unsubscribed: 'unsubscribe' };
    const sup = changes.filter((c) => reasons[c.to]);
    for (const c of sup) {
      await q.query(
        `INSERT INTO email_suppressions (account_id, stream, address, reason, origin, message_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (account_id, stream, address) DO NOTHING`,
        [c.job.accountId, c.job.payload.stream, c.job.payload.rcpt, reasons[c.to], String(c.detail.origin ?? 'smtp'), c.job.messageId, now],
      );
      // A hard bounce or complaint stops every stream; an unsubscribe only the stream it came from.
      if (c.to !== 'unsubscribed') {
        await q.query(
          `INSERT INTO email_suppressions (account_id, stream, address, reason, origin, message_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (account_id, stream, address) DO NOTHING`,
          [c.job.accountId, c.job.payload.stream === 'bulk' ? 'transactional' : 'bulk', c.job.payload.rcpt, reasons[c.to], String(c.detail.origin ?? 'smtp'), c.job.messageId, now],
        );
      }
    }
  };

  /** The pipeline's resultState: a 5xx is a bounce (hard), the relay's 250 is delivery when the relay is the MX. */
  resultState(acceptIsDelivery: boolean) {
    return (_job: unknown, r: { kind: 'sent' | 'fail'; providerCode?: string }): string | undefined => {
      if (r.kind === 'sent') return acceptIsDelivery ? 'delivered' : 'sent';
      return isHardBounce(r.providerCode) ? 'bounced' : undefined;
    };
  }

  /** A 4xx attempt: history row and email.deferred (the job stays queued; the pipeline retries it). */
  async deferred(accountId: string, messageId: string, detail: { code: string; providerCode?: string; message: string }): Promise<void> {
    await this.o.db.tx(async (q) => {
      await this.history(q, [{ messageId, kind: 'deferred', detail }]);
      await q.query(`UPDATE email_messages SET status = 'deferred', updated_at = $2 WHERE id = $1 AND status = 'queued'`, [messageId, this.clock()]);
      await this.o.events.emit(q, { accountId, type: 'email.deferred', messageKey: messageId, data: { messageId, status: 'deferred', error: detail.code, providerError: detail.providerCode ?? null, at: new Date(this.clock()).toISOString() } });
    });
    this.o.events.wake();
  }

  /** A DSN or ARF report for a message (named by its VERP address). */
  async onReport(messageId: string, report: MailReport): Promise<void> {
    const { rows } = await this.o.db.query<MessageRow>(`SELECT * FROM email_messages WHERE id = $1`, [messageId]);
    const m = rows[0];
    if (!m?.job_id) {
      this.o.log.info({ messageId }, 'email report for an unknown message; ignored');
      return;
    }
    const detail: Record<string, unknown> = { origin: report.kind === 'dsn' ? 'dsn' : 'arf', ...report };
    await this.o.db.tx((q) => this.history(q, [{ messageId, kind: report.kind === 'dsn' ? `dsn_${report.action}` : 'complaint', detail }]));
    if (report.kind === 'complaint') {
      await this.o.pipeline().applyStatus([{ jobId: m.job_id, state: 'complained', detail }]);
      return;
    }
    if (report.action === 'failed') {
      const hard = report.status.startsWith('5');
      await this.o.pipeline().applyStatus([
        { jobId: m.job_id, state: hard ? 'bounced' : 'failed', detail, error: { code: hard ? 'HARD_BOUNCE' : 'SOFT_BOUNCE', providerCode: report.status, message: report.diagnostic ?? undefined } },
      ]);
    } else if (report.action === 'delivered' || report.action === 'relayed') {
      await this.o.pipeline().applyStatus([{ jobId: m.job_id, state: 'delivered', detail }]);
    } else if (report.action === 'delayed') {
      await this.deferred(m.account_id, messageId, { code: 'DELAYED', providerCode: report.status, message: report.diagnostic ?? 'delayed' });
    }
  }

  /** An engagement (open, click, unsubscribe) of a message, by id; false when unknown. */
  async engage(messageId: string, state: 'opened' | 'clicked' | 'unsubscribed', detail: Record<string, unknown>, moveState: boolean): Promise<boolean> {
    const { rows } = await this.o.db.query<MessageRow>(`SELECT * FROM email_messages WHERE id = $1`, [messageId]);
    const m = rows[0];
    if (!m?.job_id) return false;
    // Every open and click is history; a machine open (image proxy, scanner) moves no status and sends no event.
    await this.o.db.tx((q) => this.history(q, [{ messageId, kind: state, detail }]));
    if (moveState) await this.o.pipeline().applyStatus([{ jobId: m.job_id, state, detail: { origin: state === 'unsubscribed' ? 'list-unsubscribe' : 'tracking', ...detail } }]);
    return true;
  }

  async message(accountId: string, id: string): Promise<MessageView | null> {
    const { rows } = await this.o.db.query<MessageRow>(`SELECT * FROM email_messages WHERE account_id = $1 AND id = $2`, [accountId, id]);
    const m = rows[0];
    if (!m) return null;
    const pipeline = this.o.pipeline();
    const job = m.job_id
      ? (await this.o.db.query<{ attempts: number; ferry_error: string | null; provider_error: string | null }>(`SELECT attempts, ferry_error, provider_error FROM outbound_jobs WHERE id = $1`, [m.job_id])).rows[0]
      : undefined;
    const jobHistory = m.job_id ? await pipeline.store.history(m.job_id) : [];
    const own = (await this.o.db.query<{ kind: string; at: string | number; detail: Record<string, unknown> }>(`SELECT kind, at, detail FROM email_events WHERE message_id = $1 ORDER BY seq`, [id])).rows;
    const history = [
      ...jobHistory.map((h) => ({ kind: h.kind === 'attempt' ? 'attempt' : h.kind, status: h.state, at: h.at, detail: h.detail })),
      ...own.map((e) => ({ kind: e.kind, status: e.kind === 'dropped' ? 'dropped' : e.kind === 'deferred' ? 'deferred' : m.status, at: Number(e.at), detail: e.detail })),
    ]
      .sort((a, b) => a.at - b.at)
      .map((h) => ({ ...h, at: new Date(h.at).toISOString() }));
    return {
      id: m.id,
      sendId: m.send_id,
      stream: m.stream,
      from: m.from_address,
      to: m.recipient,
      subject: m.subject,
      status: m.status,
      tags: m.tags,
      metadata: m.metadata,
      attempts: job?.attempts ?? 0,
      error: job?.ferry_error ?? null,
      providerError: job?.provider_error ?? null,
      createdAt: new Date(Number(m.created_at)).toISOString(),
      updatedAt: new Date(Number(m.updated_at)).toISOString(),
      history,
    };
  }

  // Suppressions

  async suppressions(accountId: string, stream?: Stream, limit = 100, after?: string): Promise<Array<{ address: string; stream: Stream; reason: string; origin: string; messageId: string | null; createdAt: string }>> {
    const { rows } = await this.o.db.query<{ address: string; stream: Stream; reason: string; origin: string; message_id: string | null; created_at: string | number }>(
      `SELECT * FROM email_suppressions WHERE account_id = $1 AND ($2::text IS NULL OR stream = $2) AND ($3::text IS NULL OR address > $3)
       ORDER BY address, stream LIMIT $4`,
      [accountId, stream ?? null, after ?? null, limit],
    );
    return rows.map((r) => ({ address: r.address, stream: r.stream, reason: r.reason, origin: r.origin, messageId: r.message_id, createdAt: new Date(Number(r.created_at)).toISOString() }));
  }

  async suppress(accountId: string, stream: Stream, address: string, reason: SuppressionReason, origin: string): Promise<void> {
    await this.o.db.query(
      `INSERT INTO email_suppressions (account_id, stream, address, reason, origin, created_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (account_id, stream, address) DO UPDATE SET reason = EXCLUDED.reason, origin = EXCLUDED.origin, created_at = EXCLUDED.created_at`,
      [accountId, stream, lower(address), reason, origin, this.clock()],
    );
  }

  async unsuppress(accountId: string, address: string, stream?: Stream): Promise<number> {
    const r = await this.o.db.query(`DELETE FROM email_suppressions WHERE account_id = $1 AND address = $2 AND ($3::text IS NULL OR stream = $3)`, [accountId, lower(address), stream ?? null]);
    return r.rowCount;
  }
}
