import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GuardedHttp, GuardedResolver } from '../../security/guarded-http.js';

/** A business number the simulator serves: its ids and credentials. */
export interface SimNumber {
  phoneNumberId: string;
  businessAccountId: string;
  accessToken: string;
  appSecret: string;
  displayPhoneNumber?: string | null;
}

export interface MessengerSimulatorOptions {
  /** The Bearer token sends must carry. */
  accessToken: string;
  /** Signs the status webhooks (X-Hub-Signature-256). */
  appSecret: string;
  phoneNumberId: string;
  businessAccountId: string;
  displayPhoneNumber?: string;
  /** Where status, inbound and template webhooks go; resolved at each delivery (the daemon's port comes later). */
  webhookUrl: () => string | null;
  /** Delay before each status webhook (sent, delivered, read). */
  statusDelayMs?: number;
  /** Each status webhook is sent twice. */
  duplicates?: boolean;
  /** Statuses are sent read, delivered, sent (each still after statusDelayMs). */
  reorder?: boolean;
  /** Delay before a new template's review. */
  reviewDelayMs?: number;
  /**
   * Other business numbers, by phone number id or by WABA id (the embedded simulator reads Ferry's numbers: what the
   * operator adds is served at once, each with its own token and app secret).
   */
  numberOf?: (id: string) => Promise<SimNumber | null>;
  /** Whether a media link can be downloaded (e.g. a GET trusting a test CA); default a guarded GET of public HTTPS only. */
  mediaReachable?: (url: string) => Promise<boolean>;
  clock?: () => number;
}

export interface SimTemplate {
  id: string;
  name: string;
  language: string;
  category: string;
  components: unknown[];
  status: string;
  rejected_reason?: string;
}

export interface SimSent {
  wamid: string;
  /** The business phone number id it was sent from. */
  from: string;
  to: string;
  type: string;
  body: Record<string, unknown>;
}

type Injection = { code: number; times: number };

const ERROR_TEXT: Record<number, { message: string; type: string; status: number }> = {
  131026: { message: 'Message undeliverable', type: 'OAuthException', status: 400 },
  131047: { message: 'Re-engagement message', type: 'OAuthException', status: 400 },
  131053: { message: 'Media upload error', type: 'OAuthException', status: 400 },
  130429: { message: 'Rate limit hit', type: 'OAuthException', status: 429 },
  132001: { message: 'Template name does not exist in the translation', type: 'OAuthException', status: 404 },
  190: { message: 'Invalid OAuth access token', type: 'OAuthException', status: 401 },
  100: { message: 'Invalid parameter', type: 'OAuthException', status: 400 },
};

const WINDOW_MS = 24 * 3_600_000;

/**
 * A messenger platform speaking the Cloud API over HTTP (what Ferry's MetaCloudAdapter talks to): sends answered with
 * wamids and Graph error bodies, signed status webhooks back (with delays, duplicates and reordering), media links
 * really fetched, templates reviewed (PENDING → APPROVED or REJECTED by rule; `hello_world`/`en_US` approved from the
 * start), number checks, the quality rating, a test user who replies (opening the 24-hour window), and injected
 * errors 131026, 131047, 131053, 130429 per recipient.
 */
export class MessengerSimulator {
  readonly sent: SimSent[] = [];
  readonly templates = new Map<string, SimTemplate>();
  /** Numbers not on the platform (everyone else is). */
  readonly offPlatform = new Set<string>();
  quality = { quality_rating: 'GREEN', messaging_limit_tier: 'TIER_1K' };
  /** Webhook deliveries that failed (for tests and the CLI). */
  webhookFailures = 0;
  /** A slow platform: each send is answered after this long (tests of Ferry's inline attempt deadline). */
  sendDelayMs = 0;
  private readonly injections = new Map<string, Injection[]>();
  private readonly lastReply = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private server: Server | null = null;
  private seq = 0;
  private readonly clock: () => number;

  constructor(private readonly o: MessengerSimulatorOptions) {
    this.clock = o.clock ?? Date.now;
    this.templates.set(`${o.businessAccountId}:hello_world:en_US`, {
      id: '1000000000000001',
      name: 'hello_world',
      language: 'en_US',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'Hello World' }],
      status: 'APPROVED',
    });
  }

  get url(): string {
    const a = this.server?.address() as AddressInfo | null;
    if (!a) throw new Error('the messenger simulator is not listening');
    return `http://127.0.0.1:${a.port}`;
  }

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => resolve());
    });
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** The next `times` sends to `to` fail with the platform's `code`. */
  inject(to: string, code: number, times = 1): void {
    const list = this.injections.get(to) ?? [];
    list.push({ code, times });
    this.injections.set(to, list);
  }

  private get primary(): SimNumber {
    return { phoneNumberId: this.o.phoneNumberId, businessAccountId: this.o.businessAccountId, accessToken: this.o.accessToken, appSecret: this.o.appSecret, displayPhoneNumber: this.o.displayPhoneNumber ?? null };
  }

  /** A number by its phone number id or WABA id: the simulator's own, else one of `numberOf`. */
  async number(id: string): Promise<SimNumber | null> {
    if (id === this.o.phoneNumberId || id === this.o.businessAccountId) return this.primary;
    return (await this.o.numberOf?.(id).catch(() => null)) ?? null;
  }

  /**
   * The test user `from` writes to a business number (`to`: its phone number id; default the simulator's own): an
   * inbound message webhook, signed with that number's app secret (opens its 24-hour window). Resolves once Ferry
   * answered the webhook (or gave up after the retries).
   */
  async userReply(from: string, text: string, name = 'Test User', to?: string): Promise<string> {
    return (await this.reply(from, text, name, to)).wamid;
  }

  /** userReply, saying whether the webhook was taken (a 2xx from Ferry). */
  async reply(from: string, text: string, name = 'Test User', to?: string): Promise<{ wamid: string; delivered: boolean }> {
    const n = to === undefined ? this.primary : await this.number(to);
    if (!n || n.phoneNumberId !== (to ?? n.phoneNumberId)) throw new Error(`the simulator serves no business number ${to}`);
    const id = this.wamid();
    this.lastReply.set(`${n.phoneNumberId}:${from}`, this.clock());
    const delivered = await this.deliver(
      'messages',
      {
        messaging_product: 'whatsapp',
        metadata: this.metadata(n),
        contacts: [{ profile: { name }, wa_id: from }],
        messages: [{ from, id, timestamp: this.ts(), type: 'text', text: { body: text } }],
      },
      n,
    );
    return { wamid: id, delivered };
  }

  get phoneNumberId(): string {
    return this.o.phoneNumberId;
  }

  /** The platform changes the number's quality rating: a phone_number_quality_update webhook. */
  async setQuality(rating: string, tier: string): Promise<void> {
    this.quality = { quality_rating: rating, messaging_limit_tier: tier };
    await this.deliver('phone_number_quality_update', { display_phone_number: this.display(this.primary), event: rating === 'RED' ? 'FLAGGED' : 'UPGRADE', current_limit: tier }, this.primary);
  }

  /** Sends a status webhook now (tests of duplicates and order). */
  async status(wamid: string, status: string, recipient: string, errors?: unknown[], number: SimNumber = this.primary): Promise<void> {
    await this.deliver(
      'messages',
      {
        messaging_product: 'whatsapp',
        metadata: this.metadata(number),
        statuses: [{ id: wamid, status, timestamp: this.ts(), recipient_id: recipient, ...(errors ? { errors } : {}) }],
      },
      number,
    );
  }

  /** Signs a body as the platform does (with the simulator's own app secret unless another is given). */
  sign(raw: string, appSecret = this.o.appSecret): string {
    return 'sha256=' + createHmac('sha256', appSecret).update(raw).digest('hex');
  }

  private display(n: SimNumber): string {
    return n.displayPhoneNumber ?? '15550001234';
  }

  private metadata(n: SimNumber) {
    return { display_phone_number: this.display(n), phone_number_id: n.phoneNumberId };
  }

  private ts(): string {
    return String(Math.floor(this.clock() / 1000));
  }

  private wamid(): string {
    return 'wamid.' + Buffer.concat([Buffer.from(`sim${++this.seq}:`), randomBytes(12)]).toString('base64url');
  }

  private later(ms: number, fn: () => Promise<void>): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      void fn().catch(() => undefined);
    }, ms);
    this.timers.add(t);
  }

  private async deliver(field: string, value: Record<string, unknown>, n: SimNumber): Promise<boolean> {
    const url = this.o.webhookUrl();
    if (!url) return false;
    const raw = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: n.businessAccountId, changes: [{ field, value }] }] });
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': this.sign(raw, n.appSecret) }, body: raw });
        await res.arrayBuffer();
        if (res.ok) return true;
      } catch {
        // retried below, as the platform retries
      }
      this.webhookFailures++;
      if (!this.server) return false;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
    return false;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://sim');
    const parts = url.pathname.split('/').filter(Boolean);
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const fail = (code: number, extra: Record<string, string> = {}) => {
      const e = ERROR_TEXT[code] ?? { message: 'Error', type: 'OAuthException', status: 400 };
      res.writeHead(e.status, { 'content-type': 'application/json', ...extra });
      res.end(JSON.stringify({ error: { message: e.message, type: e.type, code, error_subcode: 2494010, fbtrace_id: randomBytes(8).toString('base64url') } }));
    };
    let body: any = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      return fail(100);
    }
    // The simulator's own control: POST /_sim/reply {from, text, to?} plays the user (`ferry sim messenger reply`),
    // with the Bearer token of the number written to.
    if (req.method === 'POST' && parts[0] === '_sim' && parts[1] === 'reply') {
      const n = await this.number(String(body.to ?? this.o.phoneNumberId));
      if (!n || req.headers.authorization !== `Bearer ${n.accessToken}`) return fail(190);
      if (typeof body.from !== 'string' || !/^\d{8,15}$/.test(body.from) || typeof body.text !== 'string') return fail(100);
      const r = await this.reply(body.from, body.text, typeof body.name === 'string' ? body.name : undefined, n.phoneNumberId);
      return answer(r.delivered ? 200 : 502, { wamid: r.wamid, from: body.from, to: n.phoneNumberId, delivered: r.delivered });
    }
    const [, id, edge] = parts;
    const n = id ? await this.number(id) : null;
    if (!n || req.headers.authorization !== `Bearer ${n.accessToken}`) return fail(190);
    const isPhone = id === n.phoneNumberId;
    if (req.method === 'POST' && isPhone && edge === 'messages') return this.onSend(n, body, answer, fail);
    if (req.method === 'POST' && isPhone && edge === 'contacts') {
      const inputs: string[] = Array.isArray(body.contacts) ? body.contacts.map(String) : [];
      return answer(200, { contacts: inputs.map((input) => ({ input, wa_id: input.replace(/\D/g, ''), status: this.offPlatform.has(input.replace(/\D/g, '')) ? 'invalid' : 'valid' })) });
    }
    if (req.method === 'GET' && isPhone && !edge) return answer(200, { id, display_phone_number: this.display(n), ...this.quality });
    if (id === n.businessAccountId && edge === 'message_templates') {
      const prefix = `${n.businessAccountId}:`;
      if (req.method === 'POST') return this.onTemplate(n, body, answer, fail);
      if (req.method === 'GET') return answer(200, { data: [...this.templates].filter(([k]) => k.startsWith(prefix)).map(([, t]) => t) });
      if (req.method === 'DELETE') {
        const name = url.searchParams.get('name') ?? '';
        let deleted = 0;
        for (const [k, t] of this.templates) if (k.startsWith(prefix) && t.name === name) deleted += Number(this.templates.delete(k));
        return deleted ? answer(200, { success: true }) : fail(100);
      }
    }
    answer(404, { error: { message: 'Unknown path', type: 'OAuthException', code: 803 } });
  }

  private async onSend(n: SimNumber, body: any, answer: (s: number, b: unknown) => void, fail: (code: number, h?: Record<string, string>) => void): Promise<void> {
    if (this.sendDelayMs > 0) await new Promise((r) => setTimeout(r, this.sendDelayMs));
    const to = String(body.to ?? '');
    const type = String(body.type ?? '');
    if (body.messaging_product !== 'whatsapp' || !/^\d{8,15}$/.test(to) || !type || typeof body[type] !== 'object') return fail(100);
    const queued = this.injections.get(to);
    if (queued?.length) {
      const inj = queued[0];
      if (--inj.times <= 0) queued.shift();
      return fail(inj.code, inj.code === 130429 ? { 'retry-after': '1' } : {});
    }
    if (this.offPlatform.has(to)) return fail(131026);
    if (type === 'template') {
      const name = String(body.template?.name);
      const language = String(body.template?.language?.code ?? body.template?.language);
      // Every business account starts with the sample hello_world (en_US) approved.
      const sample = name === 'hello_world' && language === 'en_US' && !this.templates.has(`${n.businessAccountId}:${name}:${language}`);
      const t = this.templates.get(`${n.businessAccountId}:${name}:${language}`);
      if (!sample && (!t || t.status !== 'APPROVED')) return fail(132001);
    } else {
      const last = this.lastReply.get(`${n.phoneNumberId}:${to}`);
      if (last === undefined || this.clock() - last > WINDOW_MS) return fail(131047);
    }
    const link = (body[type] as { link?: unknown }).link;
    if (typeof link === 'string') {
      const reachable = await (this.o.mediaReachable ?? defaultReachable)(link).catch(() => false);
      if (!reachable) return fail(131053);
    }
    const wamid = this.wamid();
    this.sent.push({ wamid, from: n.phoneNumberId, to, type, body });
    answer(200, { messaging_product: 'whatsapp', contacts: [{ input: to, wa_id: to }], messages: [{ id: wamid }] });
    const order = this.o.reorder ? ['read', 'delivered', 'sent'] : ['sent', 'delivered', 'read'];
    const delay = this.o.statusDelayMs ?? 50;
    // One after another, each delivered (acknowledged) before the next is due, as the platform does for one message.
    const next = (i: number) => {
      if (i >= order.length) return;
      this.later(delay, async () => {
        await this.status(wamid, order[i], to, undefined, n);
        if (this.o.duplicates) await this.status(wamid, order[i], to, undefined, n);
        next(i + 1);
      });
    };
    next(0);
  }

  private onTemplate(n: SimNumber, body: any, answer: (s: number, b: unknown) => void, fail: (code: number) => void): void {
    const name = String(body.name ?? '');
    const language = String(body.language ?? '');
    const category = String(body.category ?? '');
    if (!/^[a-z0-9_]{1,512}$/.test(name) || !language || !['MARKETING', 'UTILITY', 'AUTHENTICATION'].includes(category)) return fail(100);
    const t: SimTemplate = { id: String(2_000_000_000_000_000 + ++this.seq), name, language, category, components: body.components ?? [], status: 'PENDING' };
    this.templates.set(`${n.businessAccountId}:${name}:${language}`, t);
    answer(200, { id: t.id, status: 'PENDING', category });
    this.later(this.o.reviewDelayMs ?? 50, async () => {
      const reason = reviewTemplate(t);
      t.status = reason ? 'REJECTED' : 'APPROVED';
      if (reason) t.rejected_reason = reason;
      await this.deliver(
        'message_template_status_update',
        { event: t.status, message_template_id: Number(t.id), message_template_name: t.name, message_template_language: t.language, reason: reason ?? 'NONE' },
        n,
      );
    });
  }
}

/**
 * The simulator's review rule: a template needs a BODY with text whose {{n}} placeholders run 1, 2, 3…
 * (INVALID_FORMAT otherwise); an AUTHENTICATION template may not carry a URL (TAG_CONTENT_MISMATCH). Null: approved.
 */
export function reviewTemplate(t: Pick<SimTemplate, 'category' | 'components'>): string | null {
  const body = (t.components as Array<{ type?: string; text?: string }>).find((c) => c?.type === 'BODY');
  if (!body || typeof body.text !== 'string' || !body.text.trim()) return 'INVALID_FORMAT';
  const nums = [...body.text.matchAll(/\{\{(\d+)\}\}/g)].map((m) => Number(m[1]));
  if (nums.some((n, i) => n !== i + 1)) return 'INVALID_FORMAT';
  if (t.category === 'AUTHENTICATION' && /https?:\/\//.test(body.text)) return 'TAG_CONTENT_MISMATCH';
  return null;
}

// As the platform fetches media: public HTTPS only, through the SSRF-guarded client (never a bare fetch of a link).
const mediaHttp = new GuardedHttp({ resolver: new GuardedResolver({ allowPrivateTargets: false, httpsOnly: true }) });

async function defaultReachable(url: string): Promise<boolean> {
  const r = await mediaHttp.open(url, { method: 'GET', timeoutMs: 10_000, maxBytes: 0 });
  r.close();
  return r.status >= 200 && r.status < 300;
}
