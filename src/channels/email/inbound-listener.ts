import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { SMTPServer } from 'smtp-server';
import { parseReport, type MailReport } from './report-parser.js';
import type { VerpRefusal, VerpSigner } from './verp.js';

export interface InboundListenerOptions {
  host: string;
  port: number;
  /** Signs and checks the return paths (and names the bounce domain). */
  verp: VerpSigner;
  maxBytes: number;
  maxRecipients: number;
  log: Logger;
  /** A report for a message (the VERP address named it); rejects to make the sender retry (e.g. storage down). */
  onReport(messageId: string, report: MailReport): Promise<void>;
  /** A recipient refused at RCPT (counted: a forged bounce shows as unsigned or bad_signature). */
  onRefused?(reason: VerpRefusal): void;
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
 * The SMTP listener of the bounce domain: accepts mail only for signed VERP addresses (b+<messageId>-<tag>@<bounceDomain>,
 * verp.ts; unsigned or wrongly signed ones are refused at RCPT, so a forged bounce suppresses nothing), at most
 * maxRecipients per message and maxBytes per message, reads DSN and ARF reports and hands them on. A report that
 * cannot be recorded is answered 451 so the reporting server tries again (nothing lost).
 */
export class InboundListener {
  private readonly server: SMTPServer;
  port = 0;
  received = 0;

  constructor(private readonly o: InboundListenerOptions) {
    this.server = new SMTPServer({
      name: o.verp.bounceDomain,
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      size: o.maxBytes,
      logger: false,
      onRcptTo: (address, session, cb) => {
        const verp = o.verp.check(address.address);
        if ('refused' in verp) {
          o.onRefused?.(verp.refused);
          // Debug: anyone can mail the bounce domain; the counter shows a flood of forgeries.
          o.log.debug({ rcpt: address.address, reason: verp.refused }, 'bounce-domain recipient refused');
          return cb(new SmtpReplyError(550, '5.1.1 no such mailbox'));
        }
        if (session.envelope.rcptTo.length >= o.maxRecipients) return cb(new SmtpReplyError(452, '4.5.3 too many recipients'));
        cb();
      },
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= o.maxBytes) chunks.push(c);
        });
        stream.on('end', () => {
          if ((stream as unknown as { sizeExceeded?: boolean }).sizeExceeded || size > o.maxBytes) return cb(new SmtpReplyError(552, '5.3.4 message too big'));
          void this.handle(Buffer.concat(chunks), session.envelope.rcptTo.map((r) => r.address)).then(
            () => cb(null, '2.0.0 report taken'),
            (err: Error) => {
              o.log.warn({ err: err.message }, 'email report not recorded; the sender will retry');
              cb(new SmtpReplyError(451, '4.3.0 try again later'));
            },
          );
        });
      },
    });
  }

  private async handle(raw: Buffer, rcpts: string[]): Promise<void> {
    this.received++;
    const report = await parseReport(raw);
    if (!report) {
      this.o.log.debug({ rcpts }, 'mail to the bounce domain that is not a report; ignored');
      return;
    }
    for (const rcpt of rcpts) {
      const id = this.o.verp.messageId(rcpt);
      if (id) await this.o.onReport(id, report);
    }
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.o.port, this.o.host, () => resolve());
    });
    this.port = (this.server.server.address() as AddressInfo).port;
    return this.port;
  }

  close(): Promise<void> {
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
