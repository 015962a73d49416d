/**
 * Real report mail as receiving servers send it: a DSN (RFC 3464, multipart/report; report-type=delivery-status) and
 * an ARF complaint (RFC 5965, multipart/report; report-type=feedback-report). Built by hand so the bytes are exactly
 * the standard shape the inbound listener must read.
 */
export interface DsnInput {
  reportingMta: string;
  to: string;
  from: string;
  recipient: string;
  action: 'failed' | 'delayed' | 'delivered';
  status: string;
  diagnostic: string;
  originalHeaders: string;
}

function boundary(): string {
  return `=_ferry_${Math.random().toString(36).slice(2)}`;
}

export function buildDsn(i: DsnInput): string {
  const b = boundary();
  const subject = i.action === 'failed' ? 'Undelivered Mail Returned to Sender' : i.action === 'delayed' ? 'Delayed Mail (still being retried)' : 'Successful Mail Delivery Report';
  return [
    `From: Mail Delivery System <MAILER-DAEMON@${i.reportingMta}>`,
    `To: <${i.to}>`,
    `Subject: ${subject}`,
    `Date: ${new Date().toUTCString()}`,
    `Auto-Submitted: auto-replied`,
    `MIME-Version: 1.0`,
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${b}"`,
    ``,
    `--${b}`,
    `Content-Type: text/plain; charset=us-ascii`,
    ``,
    `This is the mail system at host ${i.reportingMta}. Your message to <${i.recipient}> ${i.action === 'failed' ? 'could not be delivered' : i.action}.`,
    ``,
    `--${b}`,
    `Content-Type: message/delivery-status`,
    ``,
    `Reporting-MTA: dns; ${i.reportingMta}`,
    `Arrival-Date: ${new Date().toUTCString()}`,
    ``,
    `Final-Recipient: rfc822; ${i.recipient}`,
    `Original-Recipient: rfc822; ${i.recipient}`,
    `Action: ${i.action}`,
    `Status: ${i.status}`,
    `Diagnostic-Code: smtp; ${i.diagnostic}`,
    ``,
    `--${b}`,
    `Content-Type: text/rfc822-headers`,
    ``,
    i.originalHeaders.trimEnd(),
    ``,
    `--${b}--`,
    ``,
  ].join('\r\n');
}

export interface ArfInput {
  reportingMta: string;
  to: string;
  recipient: string;
  originalHeaders: string;
}

export function buildArf(i: ArfInput): string {
  const b = boundary();
  return [
    `From: Feedback Loop <fbl@${i.reportingMta}>`,
    `To: <${i.to}>`,
    `Subject: FW: complaint`,
    `Date: ${new Date().toUTCString()}`,
    `MIME-Version: 1.0`,
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${b}"`,
    ``,
    `--${b}`,
    `Content-Type: text/plain; charset=us-ascii`,
    ``,
    `This is an email abuse report for a message received from your network.`,
    ``,
    `--${b}`,
    `Content-Type: message/feedback-report`,
    ``,
    `Feedback-Type: abuse`,
    `User-Agent: FerryMailSim/1.0`,
    `Version: 1`,
    `Original-Rcpt-To: <${i.recipient}>`,
    `Reported-Domain: ${i.reportingMta}`,
    ``,
    `--${b}`,
    `Content-Type: text/rfc822-headers`,
    ``,
    i.originalHeaders.trimEnd(),
    ``,
    `--${b}--`,
    ``,
  ].join('\r\n');
}
