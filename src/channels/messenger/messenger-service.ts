import type { Logger } from 'pino';
import type { ModuleEvents } from '../../platform/event-sink.js';
import type { OutboundPipeline, StateChange } from '../../outbound/index.js';
import type { Db, Queryable, Transaction } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import type { BusinessNumber, BusinessNumbers } from './business-numbers.js';
import { ConversationWindows } from './conversation-windows.js';
import type { MediaChecker, MediaType } from './media-check.js';
import type { MessageType } from './message-rules.js';
import { META_ERRORS, META_PROVIDER } from './providers/meta-errors.js';
import type { MessengerJobPayload } from './providers/meta-cloud.js';
import type { GraphNumber, MetaGraphClient } from './providers/meta-graph.js';

/** Why a send was refused before anything was written: one of the spec's WA codes (or a missing message/template). */
export class MessengerRefusal extends Error {
  constructor(
    readonly code: 'WA001' | 'WA002' | 'WA003' | 'WA004' | 'MESSAGE_NOT_FOUND' | 'NOT_RESENDABLE' | 'TEMPLATE_NOT_FOUND' | 'TEMPLATE_EXISTS' | 'MESSENGER_NO_NUMBER',
    message: string,
    readonly data: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface SendInput {
  accountId: string;
  to: string;
  type: MessageType;
  content: Record<string, unknown>;
  reference?: string | null;
  resentFrom?: string | null;
  /** The business phone number id to send from (one of the account's); absent: the account's first number. */
  from?: string | null;
}

export interface MessageView {
  messageId: string;
  wamid: string | null;
  to: string;
  type: string;
  status: string;
  reference: string | null;
  resentFrom: string | null;
  error: { code: string; providerCode: string | null; message: string | null } | null;
  createdAt: string;
  updatedAt: string;
  history: Array<{ status: string; at: string; kind: string; detail: Record<string, unknown> | null }>;
}

export interface NumberCheck {
  phone: string;
  status: 'on_platform' | 'not_on_platform' | 'unknown';
  source: string | null;
  checkedAt: string | null;
}

export interface TemplateView {
  name: string;
  language: string;
  category: string;
  components: unknown[];
  status: string;
  rejectionReason: string | null;
  quality: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface MessengerServiceOptions {
  db: Db;
  log: Logger;
  /** ctx.events: messenger.* events in the transaction of the change. */
  events: ModuleEvents;
  /** The outbound pipeline, there from the daemon's start on. */
  pipeline: () => OutboundPipeline;
  media: MediaChecker;
  graph: MetaGraphClient;
  /** The business numbers: which one an account sends from, whose a webhook is. */
  numbers: BusinessNumbers;
  /** The config number's id (jobs made before numbers were kept apart carry no `from`). */
  phoneNumberId: string;
  /** The first attempt is made at once and the answer waits this long for the wamid (0: the pipeline's workers only). */
  inlineAttemptMs?: number;
  clock?: () => number;
}

type MessageRow = {
  id: string;
  account_id: string;
  business_number: string;
  recipient: string;
  type: string;
  content: Record<string, unknown>;
  reference: string | null;
  status: string;
  job_id: string;
  wamid: string | null;
  ferry_error: string | null;
  provider_error: string | null;
  resent_from: string | null;
  created_at: string | number;
  updated_at: string | number;
};

const iso = (ms: string | number) => new Date(Number(ms)).toISOString();
const MEDIA_TYPES = new Set<string>(['image', 'video', 'audio', 'document']);

/**
 * The messenger's business rules: sends checked (window, media) and accepted durably through the outbound pipeline,
 * statuses and history, resends, the provider's webhooks (statuses, inbound messages, template reviews, quality),
 * number checks and templates. Everything shared between instances is in SQL.
 */
export class MessengerService {
  readonly windows: ConversationWindows;
  clock: () => number;
  /** The config number's WABA: templates kept before numbers had WABAs (waba_id NULL) are its. */
  private readonly configWaba: string;

  constructor(private readonly o: MessengerServiceOptions & { configWaba: string }) {
    this.configWaba = o.configWaba;
    this.clock = o.clock ?? Date.now;
    this.windows = new ConversationWindows(o.db, () => this.clock());
  }

  get businessNumber(): string {
    return this.o.phoneNumberId;
  }

  get numbers(): BusinessNumbers {
    return this.o.numbers;
  }

  /** The number the account sends from (`from` when one of its own); MESSENGER_NO_NUMBER when it has none. */
  async numberOf(accountId: string, from?: string | null): Promise<BusinessNumber> {
    const n = await this.o.numbers.forAccount(accountId, from);
    if (!n) {
      throw new MessengerRefusal('MESSENGER_NO_NUMBER', from ? `${from} is not a business number of this account` : 'This account has no messenger business number (ferry messenger numbers add)', from ? { from } : {});
    }
    return n;
  }

  /** What the number already knows about a user (no provider call): on_platform, not_on_platform or null. */
  async checkKnown(business: string, phone: string): Promise<NumberCheck['status'] | null> {
    const { rows } = await this.o.db.query<{ status: NumberCheck['status'] }>(`SELECT status FROM messenger_contacts WHERE business_number = $1 AND phone = $2`, [business, phone]);
    return rows[0]?.status ?? null;
  }

  /** Attempts made inline that may still be running (the module's stop waits for them). */
  private readonly inline = new Set<Promise<unknown>>();

  async drain(): Promise<void> {
    while (this.inline.size) await Promise.allSettled([...this.inline]);
  }

  /**
   * Checks and accepts a message: its row, job, first history row and messenger.queued event commit together. With
   * inlineAttemptMs the first attempt is made at once under the pipeline's own claim on the job (no worker sends it
   * meanwhile), and the answer carries the wamid when the platform answers within that time; otherwise wamid is null
   * and the attempt (or the pipeline's retries) goes on after the answer.
   */
  async send(input: SendInput): Promise<{ messageId: string; wamid: string | null; status: string }> {
    const number = await this.numberOf(input.accountId, input.from);
    if ((await this.checkKnown(number.phoneNumberId, input.to)) === 'not_on_platform') throw new MessengerRefusal('WA002', 'The number is not on the messenger platform', { to: input.to });
    if (input.type !== 'template') {
      const until = await this.windows.openUntil(number.phoneNumberId, input.to);
      if (until === null) throw new MessengerRefusal('WA003', 'The 24-hour conversation window with this user is closed: send an approved template first', { to: input.to });
    }
    if (MEDIA_TYPES.has(input.type)) {
      const r = await this.o.media.check(input.type as MediaType, String(input.content.link));
      if (!r.ok) throw new MessengerRefusal('WA004', `Media download failed: ${r.reason}`, { link: input.content.link });
    }
    const messageId = newId('wam_');
    const now = this.clock();
    const payload: MessengerJobPayload = { to: input.to, type: input.type, content: input.content, from: number.phoneNumberId };
    const job = { product: 'messenger', provider: META_PROVIDER, accountId: input.accountId, messageId, payload };
    const row = async (q: Transaction) => {
      await q.query(
        `INSERT INTO messenger_messages (id, account_id, business_number, recipient, type, content, reference, status, job_id, resent_from, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, 'queued', '', $8, $9, $9)`,
        [messageId, input.accountId, number.phoneNumberId, input.to, input.type, JSON.stringify(input.content), input.reference ?? null, input.resentFrom ?? null, now],
      );
    };
    const waitMs = this.o.inlineAttemptMs ?? 0;
    if (waitMs <= 0) {
      const [enqueued] = await this.o.pipeline().submit([job], row);
      await this.o.db.query(`UPDATE messenger_messages SET job_id = $2 WHERE id = $1`, [messageId, enqueued.id]);
      return { messageId, wamid: null, status: 'accepted' };
    }
    const { job: enqueued, attempt } = await this.o.pipeline().submitAndAttempt(job, row);
    await this.o.db.query(`UPDATE messenger_messages SET job_id = $2 WHERE id = $1`, [messageId, enqueued.id]);
    const tracked = attempt.catch(() => null);
    this.inline.add(tracked);
    void tracked.finally(() => this.inline.delete(tracked));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), waitMs);
    });
    const r = await Promise.race([tracked, late]).finally(() => clearTimeout(timer));
    return { messageId, wamid: r?.kind === 'sent' ? r.providerId : null, status: 'accepted' };
  }

  /** A message of the account by Ferry's id or by its wamid, with its history; null when it has none such. */
  async status(accountId: string, id: string): Promise<MessageView | null> {
    const col = id.startsWith('wamid.') ? 'wamid' : 'id';
    const { rows } = await this.o.db.query<MessageRow>(`SELECT * FROM messenger_messages WHERE ${col} = $1 AND account_id = $2`, [id, accountId]);
    const m = rows[0];
    if (!m) return null;
    const jobId = m.job_id || (await this.jobOf(m.id));
    const { rows: job } = await this.o.db.query<{ state: string; provider_id: string | null; ferry_error: string | null; provider_error: string | null; error_message: string | null }>(
      `SELECT state, provider_id, ferry_error, provider_error, error_message FROM outbound_jobs WHERE id = $1`,
      [jobId],
    );
    const j = job[0];
    const history = jobId ? await this.o.pipeline().store.history(jobId) : [];
    const failed = (j?.state ?? m.status) === 'failed';
    return {
      messageId: m.id,
      wamid: j?.provider_id ?? m.wamid,
      to: m.recipient,
      type: m.type,
      status: j?.state ?? m.status,
      reference: m.reference,
      resentFrom: m.resent_from,
      error: failed ? { code: j?.ferry_error ?? m.ferry_error ?? 'UNKNOWN', providerCode: j?.provider_error ?? m.provider_error, message: j?.error_message ?? null } : null,
      createdAt: iso(m.created_at),
      updatedAt: iso(m.updated_at),
      history: history.map((h) => ({ status: h.state, at: new Date(h.at).toISOString(), kind: h.kind, detail: h.detail })),
    };
  }

  /** A failed message sent again as a new message (its own id and history; resentFrom names the first). */
  async resend(accountId: string, messageId: string): Promise<{ messageId: string; wamid: string | null; status: string; resentFrom: string }> {
    const { rows } = await this.o.db.query<MessageRow>(`SELECT * FROM messenger_messages WHERE id = $1 AND account_id = $2`, [messageId, accountId]);
    const m = rows[0];
    if (!m) throw new MessengerRefusal('MESSAGE_NOT_FOUND', 'No such message');
    const { rows: job } = await this.o.db.query<{ state: string }>(`SELECT state FROM outbound_jobs WHERE id = $1`, [m.job_id || (await this.jobOf(m.id))]);
    const state = job[0]?.state ?? m.status;
    if (state !== 'failed') throw new MessengerRefusal('NOT_RESENDABLE', `Only failed messages can be resent; this one is ${state}`, { status: state });
    const r = await this.send({ accountId, to: m.recipient, type: m.type as MessageType, content: m.content, reference: m.reference, resentFrom: m.id, from: m.business_number });
    return { ...r, resentFrom: m.id };
  }

  private async jobOf(messageId: string): Promise<string> {
    const { rows } = await this.o.db.query<{ id: string }>(`SELECT id FROM outbound_jobs WHERE product = 'messenger' AND message_id = $1`, [messageId]);
    return rows[0]?.id ?? '';
  }

  /** The pipeline's onChange: the message row follows its job; deliveries and 131026/131047 teach numbers and windows. */
  readonly onChange = async (q: Transaction, changes: readonly StateChange<MessengerJobPayload>[]): Promise<void> => {
    const now = this.clock();
    for (const c of changes) {
      const j = c.job;
      await q.query(
        `UPDATE messenger_messages SET status = $2, wamid = COALESCE($3, wamid), ferry_error = $4, provider_error = $5, updated_at = $6 WHERE id = $1`,
        [j.messageId, c.to, j.providerId, c.to === 'failed' ? j.ferryError : null, c.to === 'failed' ? j.providerError : null, now],
      );
      const business = j.payload.from ?? this.o.phoneNumberId;
      if (c.to === 'delivered' || c.to === 'read') await this.learn(q, business, j.payload.to, 'on_platform', 'delivery', now);
      if (c.to === 'failed' && j.providerError === '131026') await this.learn(q, business, j.payload.to, 'not_on_platform', 'failure_131026', now);
      if (c.to === 'failed' && j.providerError === '131047') await this.windows.close(q, business, j.payload.to);
    }
  };

  private async learn(q: Queryable, business: string, phone: string, status: NumberCheck['status'], source: string, at: number): Promise<void> {
    await q.query(
      `INSERT INTO messenger_contacts (business_number, phone, status, source, checked_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (business_number, phone) DO UPDATE SET status = EXCLUDED.status, source = EXCLUDED.source, checked_at = EXCLUDED.checked_at
       WHERE messenger_contacts.checked_at <= EXCLUDED.checked_at`,
      [business, phone, status, source, at],
    );
  }

  /**
   * The business number each entry of a webhook is about: `metadata.phone_number_id` for messages and statuses, the
   * WABA (entry.id) for template reviews and quality updates. Null when any entry names a number Ferry does not have
   * (no secret to check it with: refused).
   */
  async numbersOf(body: unknown): Promise<Map<unknown, BusinessNumber> | null> {
    const out = new Map<unknown, BusinessNumber>();
    const entries = (body as { entry?: unknown[] })?.entry;
    if (!Array.isArray(entries)) return out;
    for (const entry of entries as Array<{ id?: unknown; changes?: Array<{ field?: string; value?: any }> }>) {
      for (const change of entry?.changes ?? []) {
        const id = change?.value?.metadata?.phone_number_id;
        const n = id !== undefined ? await this.o.numbers.byId(String(id)) : await this.o.numbers.byWaba(String(entry?.id ?? ''));
        if (!n) return null;
        out.set(change, n);
      }
    }
    return out;
  }

  /**
   * One webhook POST from the platform (signature already verified): statuses through the pipeline (forward only,
   * duplicates unchanged), inbound messages stored once and opening the window, template reviews and quality updates.
   * Returns false when a status names a message this instance cannot find yet (answer non-2xx: the platform retries).
   */
  async handleWebhook(body: unknown, numbers: Map<unknown, BusinessNumber>): Promise<{ statuses: number; inbound: number; templates: number; unknown: number }> {
    const out = { statuses: 0, inbound: 0, templates: 0, unknown: 0 };
    const entries = (body as { entry?: unknown[] })?.entry;
    if (!Array.isArray(entries)) return out;
    for (const entry of entries as Array<{ changes?: Array<{ field?: string; value?: any }> }>) {
      for (const change of entry?.changes ?? []) {
        const v = change?.value ?? {};
        const number = numbers.get(change);
        if (!number) continue;
        if (change?.field === 'messages') {
          if (Array.isArray(v.statuses)) {
            const r = await this.applyStatuses(number, v.statuses);
            out.statuses += r.applied;
            out.unknown += r.unknown;
          }
          if (Array.isArray(v.messages)) out.inbound += await this.inbound(number, v.messages, v.contacts);
        } else if (change?.field === 'message_template_status_update') {
          out.templates += await this.templateStatus(number, v);
        } else if (change?.field === 'phone_number_quality_update') {
          await this.o.db.query(
            `INSERT INTO messenger_quality (business_number, rating, tier, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (business_number) DO UPDATE SET rating = EXCLUDED.rating, tier = EXCLUDED.tier, updated_at = EXCLUDED.updated_at`,
            [number.phoneNumberId, String(v.event ?? 'UNKNOWN'), v.current_limit ?? null, this.clock()],
          );
        }
      }
    }
    return out;
  }

  private async applyStatuses(number: BusinessNumber, statuses: any[]): Promise<{ applied: number; unknown: number }> {
    // A status signed for one number never moves another number's message.
    const ids = statuses.map((s) => s?.id).filter((id): id is string => typeof id === 'string');
    const { rows: foreign } = ids.length
      ? await this.o.db.query<{ wamid: string }>(`SELECT wamid FROM messenger_messages WHERE wamid = ANY($1::text[]) AND business_number <> $2`, [ids, number.phoneNumberId])
      : { rows: [] };
    const skip = new Set(foreign.map((r) => r.wamid));
    const updates = statuses
      .filter((s) => typeof s?.id === 'string' && !skip.has(s.id) && ['sent', 'delivered', 'read', 'failed'].includes(s?.status))
      .map((s) => {
        const err = Array.isArray(s.errors) ? s.errors[0] : undefined;
        const providerCode = err?.code !== undefined ? String(err.code) : undefined;
        const at = Number(s.timestamp) * 1000;
        return {
          provider: META_PROVIDER,
          providerId: s.id as string,
          state: s.status as string,
          detail: { timestamp: Number.isFinite(at) ? new Date(at).toISOString() : null, ...(providerCode ? { providerError: providerCode } : {}) },
          ...(s.status === 'failed' ? { error: { code: ferryCodeOfStatusError(providerCode), providerCode, message: err?.title ?? err?.message } } : {}),
        };
      });
    const outcomes = await this.o.pipeline().applyStatus(updates);
    return { applied: outcomes.filter((o) => o === 'changed').length, unknown: outcomes.filter((o) => o === 'not_found').length };
  }

  private async inbound(number: BusinessNumber, messages: any[], contacts: any): Promise<number> {
    const business = number.phoneNumberId;
    let n = 0;
    for (const m of messages) {
      if (typeof m?.id !== 'string' || typeof m?.from !== 'string') continue;
      const at = Number(m.timestamp) * 1000 || this.clock();
      const name = Array.isArray(contacts) ? contacts.find((c: any) => c?.wa_id === m.from)?.profile?.name : undefined;
      const stored = await this.o.db.tx(async (q) => {
        const r = await q.query(
          `INSERT INTO messenger_inbound (wamid, business_number, user_number, type, content, received_at, account_id) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
           ON CONFLICT (wamid) DO NOTHING`,
          [m.id, business, m.from, String(m.type ?? 'unknown'), JSON.stringify(m), at, number.accountId],
        );
        if (!r.rowCount) return false;
        await this.windows.open(q, business, m.from, at);
        await this.learn(q, business, m.from, 'on_platform', 'inbound', at);
        // An account's number: its owner hears it, nobody else. The config's shared number (no owner): the accounts
        // that wrote to this user from it (by index on (business_number, recipient)).
        const { rows } =
          number.accountId !== null
            ? { rows: [{ account_id: number.accountId }] }
            : await q.query<{ account_id: string }>(`SELECT DISTINCT account_id FROM messenger_messages WHERE business_number = $1 AND recipient = $2`, [business, m.from]);
        await this.o.events.emit(
          q,
          rows.map((r) => ({
            accountId: r.account_id,
            type: 'messenger.inbound' as const,
            messageKey: m.id,
            data: { wamid: m.id, from: m.from, name: name ?? null, type: m.type, message: m[m.type] ?? null, at: new Date(at).toISOString(), windowOpenUntil: new Date(at + 24 * 3_600_000).toISOString() },
          })),
        );
        return true;
      });
      if (stored) n++;
    }
    if (n) this.o.events.wake();
    return n;
  }

  private async templateStatus(number: BusinessNumber, v: any): Promise<number> {
    const name = String(v.message_template_name ?? '');
    const language = String(v.message_template_language ?? '');
    const status = String(v.event ?? '');
    if (!name || !status) return 0;
    const reason = v.reason && v.reason !== 'NONE' ? String(v.reason) : null;
    const changed = await this.o.db.tx(async (q) => {
      const { rows } = await q.query<{ account_id: string }>(
        `UPDATE messenger_templates SET status = $3, rejection_reason = $4, updated_at = $5
         WHERE name = $1 AND language = $2 AND status <> $3 AND COALESCE(waba_id, $7) = $6 AND ($8::text IS NULL OR account_id = $8) RETURNING account_id`,
        [name, language, status, reason, this.clock(), number.wabaId, this.configWaba, number.accountId],
      );
      await this.o.events.emit(
        q,
        rows.map((r) => ({ accountId: r.account_id, type: 'messenger.template.status' as const, messageKey: `${name}:${language}`, data: { name, language, status, rejectionReason: reason } })),
      );
      return rows.length;
    });
    if (changed) this.o.events.wake();
    return changed;
  }

  /**
   * Whether numbers are on the platform: what Ferry already learnt (an inbound, a delivery, a 131026 failure), else
   * the provider's answer (recorded), else unknown (the provider could not say).
   */
  async checkNumbers(accountId: string, phones: readonly string[]): Promise<NumberCheck[]> {
    const number = await this.numberOf(accountId);
    const unique = [...new Set(phones)];
    const { rows } = await this.o.db.query<{ phone: string; status: NumberCheck['status']; source: string; checked_at: string | number }>(
      `SELECT phone, status, source, checked_at FROM messenger_contacts WHERE business_number = $1 AND phone = ANY($2::text[])`,
      [number.phoneNumberId, unique],
    );
    const known = new Map(rows.map((r) => [r.phone, { phone: r.phone, status: r.status, source: r.source, checkedAt: iso(r.checked_at) } as NumberCheck]));
    const ask = unique.filter((p) => !known.has(p));
    if (ask.length) {
      const answers = await this.o.graph.checkContacts(graphOf(number), ask).catch((err: unknown) => {
        this.o.log.warn({ err: (err as Error).message }, 'number check at the provider failed');
        return null;
      });
      const now = this.clock();
      for (const p of ask) {
        const a = answers?.get(p);
        if (!a) {
          known.set(p, { phone: p, status: 'unknown', source: null, checkedAt: null });
          continue;
        }
        await this.learn(this.o.db, number.phoneNumberId, p, a, 'provider', now);
        known.set(p, { phone: p, status: a, source: 'provider', checkedAt: new Date(now).toISOString() });
      }
    }
    return phones.map((p) => known.get(p)!);
  }

  /** Submits a template for review at the provider and keeps it (PENDING) for the account. */
  async createTemplate(accountId: string, t: { name: string; language: string; category: string; components: unknown[] }): Promise<TemplateView> {
    const number = await this.numberOf(accountId);
    const existing = await this.getTemplate(accountId, t.name);
    if (existing.some((e) => e.language === t.language)) throw new MessengerRefusal('TEMPLATE_EXISTS', `A template ${t.name} in ${t.language} exists`);
    const now = this.clock();
    // Kept first, so a review webhook that overtakes the provider's answer finds it.
    await this.o.db.query(
      `INSERT INTO messenger_templates (account_id, name, language, category, components, status, created_at, updated_at, waba_id) VALUES ($1, $2, $3, $4, $5::jsonb, 'PENDING', $6, $6, $7)`,
      [accountId, t.name, t.language, t.category, JSON.stringify(t.components), now, number.wabaId],
    );
    try {
      const r = await this.o.graph.createTemplate(graphOf(number), t);
      await this.o.db.query(`UPDATE messenger_templates SET provider_id = $4 WHERE account_id = $1 AND name = $2 AND language = $3`, [accountId, t.name, t.language, r.id]);
    } catch (err) {
      await this.o.db.query(`DELETE FROM messenger_templates WHERE account_id = $1 AND name = $2 AND language = $3`, [accountId, t.name, t.language]);
      throw err;
    }
    return (await this.getTemplate(accountId, t.name)).find((e) => e.language === t.language)!;
  }

  /** The account's templates, and the platform's sample hello_world (en_US) every business account starts with. */
  async listTemplates(accountId: string): Promise<TemplateView[]> {
    const { rows } = await this.o.db.query<any>(`SELECT * FROM messenger_templates WHERE account_id = $1 ORDER BY name, language`, [accountId]);
    return withSample(rows.map(templateView), null);
  }

  async getTemplate(accountId: string, name: string): Promise<TemplateView[]> {
    const { rows } = await this.o.db.query<any>(`SELECT * FROM messenger_templates WHERE account_id = $1 AND name = $2 ORDER BY language`, [accountId, name]);
    return withSample(rows.map(templateView), name);
  }

  async deleteTemplate(accountId: string, name: string): Promise<number> {
    const { rows: found } = await this.o.db.query<{ name: string }>(`SELECT name FROM messenger_templates WHERE account_id = $1 AND name = $2`, [accountId, name]);
    if (!found.length) return 0;
    await this.o.graph.deleteTemplate(graphOf(await this.numberOf(accountId)), name);
    const r = await this.o.db.query(`DELETE FROM messenger_templates WHERE account_id = $1 AND name = $2`, [accountId, name]);
    return r.rowCount;
  }

  /** The number's quality rating and messaging tier: the provider's answer, else the last webhook's. */
  async quality(accountId: string): Promise<{ rating: string; tier: string | null; source: string; updatedAt: string }> {
    const number = await this.numberOf(accountId);
    try {
      const q = await this.o.graph.quality(graphOf(number));
      return { rating: q.rating, tier: q.tier, source: 'provider', updatedAt: new Date(this.clock()).toISOString() };
    } catch (err) {
      const { rows } = await this.o.db.query<{ rating: string; tier: string | null; updated_at: string | number }>(`SELECT rating, tier, updated_at FROM messenger_quality WHERE business_number = $1`, [number.phoneNumberId]);
      if (!rows.length) throw err;
      return { rating: rows[0].rating, tier: rows[0].tier, source: 'webhook', updatedAt: iso(rows[0].updated_at) };
    }
  }
}

function graphOf(n: BusinessNumber): GraphNumber {
  return { phoneNumberId: n.phoneNumberId, wabaId: n.wabaId, accessToken: n.accessToken };
}

/** The platform's sample template: approved in every business account from the start (the simulator's too). */
const SAMPLE_TEMPLATE: TemplateView = {
  name: 'hello_world',
  language: 'en_US',
  category: 'UTILITY',
  components: [{ type: 'BODY', text: 'Hello World' }],
  status: 'APPROVED',
  rejectionReason: null,
  quality: null,
  createdAt: new Date(0).toISOString(),
  updatedAt: new Date(0).toISOString(),
};

/** The sample joins a list (of the name asked, when one is) unless the account keeps its own of that name and language. */
function withSample(list: TemplateView[], name: string | null): TemplateView[] {
  if ((name !== null && name !== SAMPLE_TEMPLATE.name) || list.some((t) => t.name === SAMPLE_TEMPLATE.name && t.language === SAMPLE_TEMPLATE.language)) return list;
  return [...list, SAMPLE_TEMPLATE].sort((a, b) => (a.name === b.name ? (a.language < b.language ? -1 : 1) : a.name < b.name ? -1 : 1));
}

/** A failed status's error code from the platform → Ferry's, by the same one error table sends use. */
function ferryCodeOfStatusError(code: string | undefined): string {
  return (code !== undefined ? META_ERRORS.rule(code)?.ferryCode : undefined) ?? 'PROVIDER_REJECTED';
}

function templateView(r: any): TemplateView {
  return {
    name: r.name,
    language: r.language,
    category: r.category,
    components: r.components,
    status: r.status,
    rejectionReason: r.rejection_reason,
    quality: r.quality,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}
