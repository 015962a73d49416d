import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import nodemailer, { type Transporter } from 'nodemailer';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';
import { buildArf, buildDsn } from './report-mail.js';

/** One message the simulator took. */
export interface SimMail {
  at: number;
  mailFrom: string;
  rcptTo: string[];
  /** The whole message as received (headers and body, DKIM signature included). */
  raw: string;
}

export interface MailSimulatorOptions {
  host?: string;
  port?: number;
  /** Where DSN and ARF mail go (Ferry's inbound listener, the MX of the bounce domain); none: no reports. */
  reportTo?: () => { host: string; port: number } | null;
  reportDelayMs?: number;
  /** Messages kept for reading (oldest dropped first). */
  keep?: number;
  /** The hostname in its greeting and reports. */
  name?: string;
  /** Called for every message taken (the CLI prints it). */
  onMail?: (m: SimMail) => void;
}

class SmtpReplyError extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * What the simulator does for a recipient, by its local part (the part before @):
 * - contains `reject`: 550 5.1.1 at RCPT TO (a hard bounce at SMTP time);
 * - contains `defer`: 451 4.3.0 at RCPT TO, always;
 * - contains `greylist`: 451 4.7.1 the first time a sender/recipient pair is seen, accepted when retried;
 * - contains `bounce`: accepted, then a DSN (Action: failed, Status: 5.1.1) is mailed to the return path;
 * - contains `complain`: accepted, then an ARF complaint is mailed to the return path;
 * - anything else: accepted.
 */
export function ruleOf(address: string): 'reject' | 'defer' | 'greylist' | 'bounce' | 'complain' | 'accept' {
  const local = address.split('@')[0].toLowerCase();
  for (const r of ['reject', 'defer', 'greylist', 'bounce', 'complain'] as const) if (local.includes(r)) return r;
  return 'accept';
}

/**
 * A receiving mail server on smtp-server speaking real SMTP: accepts, defers, rejects or bounces by address pattern
 * (ruleOf), keeps what it received, and mails real DSN and ARF reports back to the return path over SMTP.
 */
export class MailSimulator {
  private readonly server: SMTPServer;
  private readonly mails: SimMail[] = [];
  private readonly greylisted = new Set<string>();
  private readonly keep: number;
  private readonly name: string;
  private reporter: Transporter | null = null;
  private reporterTarget = '';
  private readonly pendingReports = new Set<Promise<void>>();
  accepted = 0;
  rejected = 0;
  reportsSent = 0;
  port = 0;

  constructor(private readonly o: MailSimulatorOptions = {}) {
    this.keep = o.keep ?? 10_000;
    this.name = o.name ?? 'mx.sim.ferry.localhost';
    this.server = new SMTPServer({
      name: this.name,
      banner: 'Ferry mail simulator',
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      size: 30 * 1024 * 1024,
      logger: false,
      onRcptTo: (address, session, cb) => this.onRcptTo(address, session, cb),
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          const mail: SimMail = {
            at: Date.now(),
            mailFrom: session.envelope.mailFrom ? (session.envelope.mailFrom as SMTPServerAddress).address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            raw,
          };
          this.mails.push(mail);
          if (this.mails.length > this.keep) this.mails.splice(0, this.mails.length - this.keep);
          this.accepted++;
          this.o.onMail?.(mail);
          for (const rcpt of mail.rcptTo) {
            const rule = ruleOf(rcpt);
            if (rule === 'bounce' || rule === 'complain') this.report(rule, mail, rcpt);
          }
          cb(null, '2.0.0 Ok: queued');
        });
      },
    });
  }

  private onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, cb: (err?: Error | null) => void): void {
    const rule = ruleOf(address.address);
    if (rule === 'reject') {
      this.rejected++;
      return cb(new SmtpReplyError(550, `5.1.1 <${address.address}>: Recipient address rejected: User unknown`));
    }
    if (rule === 'defer') return cb(new SmtpReplyError(451, '4.3.0 Temporary failure, try again later'));
    if (rule === 'greylist') {
      const from = session.envelope.mailFrom ? (session.envelope.mailFrom as SMTPServerAddress).address : '';
      const key = `${from}\n${address.address}`;
      if (!this.greylisted.has(key)) {
        this.greylisted.add(key);
        return cb(new SmtpReplyError(451, '4.7.1 Greylisted, please try again later'));
      }
    }
    cb();
  }

  private report(kind: 'bounce' | 'complain', mail: SimMail, rcpt: string): void {
    const target = this.o.reportTo?.();
    if (!target || !mail.mailFrom) return;
    const headerEnd = mail.raw.indexOf('\r\n\r\n');
    const originalHeaders = headerEnd >= 0 ? mail.raw.slice(0, headerEnd) : mail.raw;
    const raw =
      kind === 'bounce'
        ? buildDsn({ reportingMta: this.name, to: mail.mailFrom, from: `MAILER-DAEMON@${this.name}`, recipient: rcpt, action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 mailbox does not exist', originalHeaders })
        : buildArf({ reportingMta: this.name, to: mail.mailFrom, recipient: rcpt, originalHeaders });
    const p = (async () => {
      await new Promise((r) => setTimeout(r, this.o.reportDelayMs ?? 50));
      const key = `${target.host}:${target.port}`;
      if (!this.reporter || this.reporterTarget !== key) {
        this.reporter?.close();
        this.reporter = nodemailer.createTransport({ pool: true, host: target.host, port: target.port, secure: false, ignoreTLS: true, maxConnections: 2 });
        this.reporterTarget = key;
      }
      // The null reverse path (MAIL FROM:<>) of reports, so a report never bounces back.
      await this.reporter.sendMail({ envelope: { from: '', to: [mail.mailFrom] }, raw });
      this.reportsSent++;
    })().catch(() => undefined);
    this.pendingReports.add(p);
    void p.finally(() => this.pendingReports.delete(p));
  }

  /** What it received, oldest first; optionally only mail to one recipient. */
  received(to?: string): SimMail[] {
    return to ? this.mails.filter((m) => m.rcptTo.includes(to)) : [...this.mails];
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.o.port ?? 0, this.o.host ?? '127.0.0.1', () => resolve());
    });
    this.port = (this.server.server.address() as AddressInfo).port;
    return this.port;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pendingReports]);
    this.reporter?.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A quick probe that something listens (the CLI's readiness line). */
export function probe(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, host, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
