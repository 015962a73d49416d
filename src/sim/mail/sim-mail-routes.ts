import type { FastifyInstance } from 'fastify';

import { ApiError } from '../../http/errors.js';
import { ok } from '../../http/envelope.js';
import type { MailSimulator, SimMail } from './simulator.js';

/** One mail as a mailbox would list it: the envelope, the headers people read, and the text body. */
export interface SimMailMessage {
  /** The From header. */
  from: string;
  /** The envelope: the recipients this copy went to and its return path (MAIL FROM). */
  to: string[];
  returnPath: string;
  subject: string;
  /** The text part, or the HTML turned into text by the parser when there is none. */
  text: string;
  /** The Message-ID header: tells apart the copies of a message sent to several recipients. */
  messageId: string | null;
  bytes: number;
  receivedAt: string;
}

const query = {
  type: 'object',
  additionalProperties: false,
  properties: {
    to: { type: 'string', minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$', description: 'only mail to this address (an envelope recipient)' },
    limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$', description: 'at most this many, 1-500 (default 20)' },
  },
} as const;

async function shown(m: SimMail): Promise<SimMailMessage> {
  const parsed = await (await import('mailparser')).simpleParser(m.raw, { skipImageLinks: true });
  return {
    from: parsed.from?.text ?? '',
    to: m.rcptTo,
    returnPath: m.mailFrom,
    subject: parsed.subject ?? '',
    text: (parsed.text ?? '').trim(),
    messageId: parsed.messageId ?? null,
    bytes: Buffer.byteLength(m.raw),
    receivedAt: new Date(m.at).toISOString(),
  };
}

/**
 * GET /admin/sim/mail/messages: what the email module's embedded mail simulator received, newest first, so a
 * developer on the embedded default can read a mail (a sign-in link, a code) from the CLI of a running daemon
 * (`ferry sim mail messages`), as `ferry sim messages` does for SMS. Only the simulator's own mail; nothing real.
 */
export function registerSimMailRoutes(app: FastifyInstance, simulator: () => MailSimulator | null): void {
  app.get<{ Querystring: { to?: string; limit?: string } }>('/admin/sim/mail/messages', { schema: { querystring: query } }, async (req) => {
    const sim = simulator();
    if (!sim) throw new ApiError('SIMULATOR_NOT_RUNNING', { message: 'This daemon runs no embedded mail simulator (email.smtp.url is set, or the email module is off)' });
    const want = req.query.to?.toLowerCase();
    const limit = req.query.limit ? Number(req.query.limit) : 20;
    const mails = sim
      .received()
      .filter((m) => want === undefined || m.rcptTo.some((r) => r.toLowerCase() === want))
      .slice(-limit)
      .reverse();
    return ok(req, 'SIM_MAIL_MESSAGES', { messages: await Promise.all(mails.map(shown)) });
  });
}
