import { promises as dns } from 'node:dns';
import { EMAIL_MCP_TOOLS } from './email-mcp-tools.js';
import { emailConfigSchema, type EmailConfig } from './config.js';
import { EMAIL_ERRORS } from './errors.js';
import { EMAIL_SCOPES } from './scopes.js';
import { IdempotencyStore } from '../../http/idempotency.js';
import type { ChannelModule } from '../../platform/channel-module.js';
import { SecretCipher } from '../../security/cipher.js';
import { MailSimulator } from '../../sim/mail/simulator.js';
import type { OutboundJob, SendResult } from '../../outbound/index.js';
import type { EmailContent, EmailJobPayload } from './email-content.js';
import { EMAIL_EVENTS, EMAIL_MACHINE } from './email-machine.js';
import { emailRoutes } from './email-routes.js';
import { EmailService } from './email-service.js';
import { InboundListener } from './inbound-listener.js';
import { SmtpAdapter, type SmtpAdapterOptions } from './providers/smtp.js';
import { SendingDomains, type TxtResolver } from './sending-domains.js';
import { TemplateStore } from './template-store.js';
import { EmailSchedules } from './schedules.js';
import { scheduleRoutes } from './schedule-routes.js';
import { trackHtml, TrackingTokens } from './tracking.js';
import { trackingRoutes } from './tracking-routes.js';
import { VerpSigner } from './verp.js';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { Counter } from 'prom-client';
import { emailStorage } from './storage.js';
import { mailSimulatorCli } from '../../sim/mail/cli.js';
import { emailCli } from './cli.js';
import { emailAdminRoutes } from './email-admin-routes.js';

/** Said in the log and on /readyz while the embedded mail simulator is the relay. */
export const EMBEDDED_MAIL_WARNING = 'NO SMTP RELAY CONFIGURED: email goes to the embedded mail simulator and no email leaves this machine (set email.smtp.url)';

/** Said in the log and on /readyz when bulk mail's one-click unsubscribe link (RFC 8058) can only be plain http. */
export const UNSUBSCRIBE_HTTP_WARNING =
  "NO PUBLIC BASE URL: bulk mail's List-Unsubscribe link points at this API's own http:// address, which mailbox providers may not reach or may not trust for one-click unsubscribe (set email.trackingBaseUrl or http.publicUrl to an https:// address)";

/** What the email module offers (tests, the CLI, other modules). */
export interface EmailModuleService {
  email: EmailService;
  domains: SendingDomains;
  templates: TemplateStore;
  schedules: EmailSchedules;
  inbound: InboundListener;
  /** Signs the VERP return paths and checks the bounce-domain recipients. */
  verp: VerpSigner;
  /** The embedded simulator when no relay is configured. */
  simulator: MailSimulator | null;
  /** Replaces the DNS resolver of domain verification (tests). */
  setResolver(r: TxtResolver): void;
}

/** Email over SMTP: sends with DKIM, bounces and complaints from DSN/ARF mail, suppressions, templates (docs/email.md). */
export const emailModule: ChannelModule<EmailModuleService> = {
  name: 'email',
  maturity: 'beta',
  tag: { name: 'email', description: 'Email over SMTP: send and bulk, DKIM sending domains, templates, suppressions, bounces and complaints' },
  scopes: EMAIL_SCOPES,
  config: { key: 'email', schema: emailConfigSchema },
  errors: EMAIL_ERRORS,
  events: EMAIL_EVENTS,
  // Storage (issue 43): its migrations and its tables' retention and vacuuming.
  ...emailStorage,
  async create(ctx) {
    const cfg = ctx.section<EmailConfig>();
    const key = ctx.deriveKey('email-dkim');
    let resolver: TxtResolver = { resolveTxt: (name) => dns.resolveTxt(name) };
    const domains = new SendingDomains({
      db: ctx.db,
      cipher: new SecretCipher({ current: { id: SecretCipher.keyIdOf(key), key } }),
      selector: cfg.dkimSelector,
      bounceDomain: cfg.bounceDomain,
      resolver: { resolveTxt: (name) => resolver.resolveTxt(name) },
    });
    const templates = new TemplateStore(ctx.db);
    const simulated = cfg.smtp.url === null;
    const email = new EmailService({
      db: ctx.db,
      log: ctx.log,
      events: ctx.events,
      domains,
      templates,
      pipeline: () => ctx.outbound.pipeline,
      requireVerifiedDomain: cfg.requireVerifiedDomain ?? !simulated,
    });

    const verp = new VerpSigner(ctx.deriveKey('email-verp'), cfg.bounceDomain);
    const refusedRcpts = new Counter({
      name: 'ferry_email_inbound_refused_total',
      help: 'Recipients refused by the bounce-domain listener: unsigned or bad_signature (a forged or pre-signing bounce), not_verp',
      labelNames: ['reason'] as const,
      registers: [ctx.metrics.registry],
    });
    const inbound = new InboundListener({
      host: cfg.inbound.host,
      port: cfg.inbound.port,
      verp,
      onRefused: (reason) => refusedRcpts.labels(reason).inc(),
      maxBytes: cfg.inbound.maxBytes,
      maxRecipients: cfg.inbound.maxRecipients,
      log: ctx.log,
      onReport: (id, report) => email.onReport(id, report),
    });

    // Without a relay the embedded simulator is one; it listens from start() on.
    const simulator = simulated
      ? new MailSimulator({ port: cfg.simulator.port, reportDelayMs: cfg.simulator.reportDelayMs, reportTo: () => ({ host: cfg.inbound.host === '0.0.0.0' ? '127.0.0.1' : cfg.inbound.host, port: inbound.port }) })
      : null;

    // Contents are read once per send and shared by its recipients' jobs (a small per-instance cache).
    const contents = new Map<string, Promise<EmailContent>>();
    const content = (sendId: string): Promise<EmailContent> => {
      let p = contents.get(sendId);
      if (!p) {
        p = ctx.db.query<{ content: EmailContent }>(`SELECT content FROM email_sends WHERE id = $1`, [sendId]).then((r) => {
          if (!r.rows.length) throw new Error(`email send ${sendId} is missing`);
          return r.rows[0].content;
        });
        p.catch(() => contents.delete(sendId));
        contents.set(sendId, p);
        if (contents.size > 512) contents.delete(contents.keys().next().value!);
      }
      return p;
    };

    // Tracking and unsubscribe links point at the public API address (signed tokens, tracking.ts).
    const tokens = new TrackingTokens(ctx.deriveKey('email-tracking'));
    let api: FastifyInstance | null = null;
    const publicBase = (): string => {
      const configured = cfg.trackingBaseUrl ?? ctx.config.http.publicUrl;
      if (configured) return configured.replace(/\/+$/, '');
      const a = api?.server.address() as AddressInfo | null | undefined;
      return a ? `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}` : `http://127.0.0.1:${ctx.config.http.port}`;
    };
    const decorate = (job: OutboundJob<EmailJobPayload>, c: EmailContent) => {
      const p = job.payload;
      const base = publicBase();
      const headers: Record<string, string> = {};
      if (p.stream === 'bulk') {
        // RFC 8058: one POST to this address unsubscribes, without a session.
        headers['List-Unsubscribe'] = `<${base}/v1/email/t/u/${tokens.sign({ kind: 'u', messageId: job.messageId })}>`;
        headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
      }
      const html = c.html && (p.trackOpens || p.trackClicks) ? trackHtml(c.html, { base, tokens, messageId: job.messageId, opens: p.trackOpens, clicks: p.trackClicks }) : undefined;
      return { headers, html };
    };

    // The relay's adapter is made by start(), once the relay's address is known (the simulator's port).
    let smtp: SmtpAdapter | null = null;
    const relay = (): SmtpAdapter => {
      if (!smtp) throw new Error('email: no SMTP relay before the module started');
      return smtp;
    };
    const smtpOptions: Omit<SmtpAdapterOptions, 'url'> = {
      decorate,
      maxConnections: cfg.smtp.maxConnections,
      returnPath: (messageId) => verp.address(messageId),
      windows: ctx.backends.rateWindows,
      relayPerSecond: cfg.smtp.relayPerSecond,
      accountPerSecond: cfg.smtp.accountPerSecond,
      content,
      dkim: (accountId, domain) => domains.dkimKey(accountId, domain),
    };
    // A 4xx answer is an attempt the pipeline retries; the message shows it as deferred, with its event.
    const adapter = {
      name: SmtpAdapter.providerName,
      endpointOf: () => relay().endpointOf(),
      async send(job: OutboundJob<EmailJobPayload>, signal: AbortSignal): Promise<SendResult> {
        const r = await relay().send(job, signal);
        if (r.kind === 'retry' && r.providerCode && /^4\d\d$/.test(r.providerCode)) {
          await email.deferred(job.accountId, job.messageId, { code: r.code, providerCode: r.providerCode, message: r.message }).catch((err: Error) => ctx.log.warn({ err: err.message }, 'email.deferred not recorded'));
        }
        return r;
      },
    };

    const acceptIsDelivery = cfg.smtp.acceptIsDelivery ?? simulated;
    ctx.outbound.product('email', {
      machine: EMAIL_MACHINE,
      deadlineMs: cfg.deadlineHours * 3_600_000,
      backoff: { baseMs: 1000, factor: 2, maxMs: 15 * 60_000 },
      resultState: email.resultState(acceptIsDelivery),
      eventData: (job: OutboundJob<EmailJobPayload>, state: string, detail: Record<string, unknown>) => ({
        to: job.payload.rcpt,
        stream: job.payload.stream,
        ...(state === 'bounced' || state === 'complained' ? { error: detail.error ?? job.ferryError, providerError: detail.providerError ?? job.providerError, origin: detail.origin ?? 'smtp' } : {}),
      }),
      onChange: email.onChange,
    });
    ctx.outbound.provider({ adapter, maxConcurrency: cfg.maxConcurrency, sendTimeoutMs: 60_000 });

    const idempotency = new IdempotencyStore(ctx.db);
    const schedules = new EmailSchedules({ db: ctx.db, email, log: ctx.log });
    return {
      service: { email, domains, templates, schedules, inbound, verp, simulator, setResolver: (r) => void (resolver = r) },
      mcpTools: EMAIL_MCP_TOOLS,
      async adminRoutes(app) {
        await emailAdminRoutes(app, { db: ctx.db, accounts: ctx.accounts, email, simulator: () => simulator });
      },
      // Due schedules are looked for every 30 s, on one instance at a time (the claim in SQL also keeps runs apart).
      jobs: [{ name: 'email.schedules', everyMs: 30_000, scope: 'cluster', run: () => schedules.runDue(Date.now()) }],
      // The bounce domain's SMTP listener (ingress, with the API).
      listeners: [
        {
          name: 'emailInbound',
          kind: 'tcp',
          role: 'api',
          host: cfg.inbound.host,
          port: cfg.inbound.port,
          open: async () => `${cfg.inbound.host}:${await inbound.listen()}`,
          close: () => inbound.close(),
        },
      ],
      async routes(app) {
        api = app;
        await app.register(emailRoutes, { email, domains, templates, idempotency, sendHorizonDays: 30 });
        await app.register(trackingRoutes, { email, tokens });
        await app.register(scheduleRoutes, { schedules, templates, email });
      },
      // Before the outbound pipeline's workers send (they start after the modules).
      async start() {
        let url = cfg.smtp.url;
        if (simulator) {
          const port = await simulator.listen();
          url = `smtp://127.0.0.1:${port}`;
          ctx.warn(EMBEDDED_MAIL_WARNING);
          ctx.log.warn({ port, inboundPort: inbound.port }, EMBEDDED_MAIL_WARNING);
        }
        smtp = new SmtpAdapter({ ...smtpOptions, url: url! });
        if (!(cfg.trackingBaseUrl ?? ctx.config.http.publicUrl)) {
          ctx.warn(UNSUBSCRIBE_HTTP_WARNING);
          ctx.log.warn({ base: publicBase() }, UNSUBSCRIBE_HTTP_WARNING);
        }
      },
      async stop() {
        smtp?.close();
        await simulator?.close();
        if (simulator) ctx.unwarn(EMBEDDED_MAIL_WARNING);
        ctx.unwarn(UNSUBSCRIBE_HTTP_WARNING);
      },
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: emailCli,
  simulators: [{ name: 'mail', description: 'mail simulator (SMTP): run one standalone, or read the running daemon’s embedded one (messages)', cli: mailSimulatorCli }],
};
