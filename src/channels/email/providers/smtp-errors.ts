import { ErrorTable, type SendResult } from '../../../outbound/index.js';

/**
 * THE error table of the SMTP relay: reply code (and enhanced status class) → Ferry code and retry / back off / fail.
 * 5xx is permanent (a hard bounce: the recipient is suppressed), 4xx temporary (deferred, retried with backoff), 421
 * and 454 mean the server is busy or closing (back off the relay), connection errors retry.
 */
export const SMTP_ERRORS = new ErrorTable('smtp', {
  '421': { ferryCode: 'RELAY_BUSY', action: 'backoff' },
  '450': { ferryCode: 'MAILBOX_UNAVAILABLE', action: 'later' },
  '451': { ferryCode: 'TEMPORARY_FAILURE', action: 'later' },
  '452': { ferryCode: 'INSUFFICIENT_STORAGE', action: 'later' },
  '454': { ferryCode: 'RELAY_TLS_UNAVAILABLE', action: 'backoff' },
  '550': { ferryCode: 'MAILBOX_UNAVAILABLE', action: 'fail' },
  '551': { ferryCode: 'USER_NOT_LOCAL', action: 'fail' },
  '552': { ferryCode: 'MESSAGE_TOO_LARGE', action: 'fail' },
  '553': { ferryCode: 'MAILBOX_NAME_INVALID', action: 'fail' },
  '554': { ferryCode: 'TRANSACTION_FAILED', action: 'fail' },
  '530': { ferryCode: 'RELAY_AUTH_REQUIRED', action: 'retry' },
  '535': { ferryCode: 'RELAY_AUTH_FAILED', action: 'retry' },
  ECONNECTION: { ferryCode: 'RELAY_UNREACHABLE', action: 'retry' },
  ETIMEDOUT: { ferryCode: 'RELAY_TIMEOUT', action: 'retry' },
  ESOCKET: { ferryCode: 'RELAY_UNREACHABLE', action: 'retry' },
  ETLS: { ferryCode: 'RELAY_TLS_FAILED', action: 'retry' },
  EAUTH: { ferryCode: 'RELAY_AUTH_FAILED', action: 'retry' },
});

/** Whether a failure is a hard bounce that suppresses the recipient: any permanent (5xx) reply at SMTP time. */
export function isHardBounce(providerCode: string | undefined): boolean {
  return providerCode !== undefined && /^5\d\d$/.test(providerCode);
}

/** A nodemailer error (or anything thrown) classified through the table. */
export function classifySmtpError(err: unknown): Exclude<SendResult, { kind: 'sent' }> {
  const e = err as { responseCode?: number; response?: string; code?: string; message?: string };
  if (typeof e.responseCode === 'number') {
    const code = String(e.responseCode);
    const known = SMTP_ERRORS.rule(code) ? code : e.responseCode >= 500 ? '554' : e.responseCode >= 400 ? '451' : code;
    const r = SMTP_ERRORS.classify({ providerCode: known, message: (e.response ?? e.message ?? '').slice(0, 500) });
    // Keep the server's own code, not the class it was filed under.
    return { ...r, providerCode: code };
  }
  const code = e.code && SMTP_ERRORS.rule(e.code) ? e.code : 'ECONNECTION';
  return SMTP_ERRORS.classify({ providerCode: code, message: (e.message ?? String(err)).slice(0, 500) });
}
