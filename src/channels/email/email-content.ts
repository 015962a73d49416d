/** The content of a send as stored in email_sends.content: everything a recipient's message is built from. */
export interface EmailContent {
  from: string;
  fromName?: string;
  to: string[];
  cc: string[];
  replyTo?: string;
  subject: string;
  html?: string;
  text?: string;
  headers: Record<string, string>;
  attachments: Array<{ filename: string; content: string; contentType?: string }>;
}

/** What an outbound job of the email product carries (the rest is in email_sends). */
export interface EmailJobPayload {
  sendId: string;
  /** The one recipient of this job (envelope RCPT TO). */
  rcpt: string;
  /** The sending domain (DKIM key). */
  domain: string;
  stream: 'transactional' | 'bulk';
  /** Per-recipient substitutions already applied (bulk personalizations) live in their own send; nothing here. */
  trackOpens: boolean;
  trackClicks: boolean;
  /** The content itself when it is small (INLINE_CONTENT_BYTES): the send is made without reading email_sends. */
  content?: EmailContent;
}

/** Contents up to this size (as JSON) travel in the job's payload too; larger ones are read from email_sends once. */
export const INLINE_CONTENT_BYTES = 16 * 1024;
