import { ErrorTable, type SendResult } from '../../../outbound/index.js';
import type { ClassifyInput } from '../../../outbound/error-table.js';

/** The provider's name (outbound_jobs.provider, the metrics' `provider` label). */
export const META_PROVIDER = 'meta-cloud';

/** The code whose first occurrence is retried once (the platform's media fetch can be transient) and then fails. */
export const MEDIA_DOWNLOAD_ERROR = '131053';

/**
 * THE Cloud API error table (spec §7.2): the platform's code → Ferry's WA code and what to do, the way mature gateways
 * treat them. The platform's code is kept beside Ferry's on the message (provider_error).
 */
export const META_ERRORS = new ErrorTable(META_PROVIDER, {
  // Recipient is not a valid platform user.
  '131026': { ferryCode: 'WA002', action: 'fail', message: 'the number is not on the messenger platform' },
  // Re-engagement: more than 24 hours since the user last replied.
  '131047': { ferryCode: 'WA003', action: 'fail', message: 'the 24-hour conversation window is closed' },
  // Media upload/download error: retried once, then WA004 (see classifyMetaError).
  '131053': { ferryCode: 'WA004', action: 'later', message: 'the platform could not download the media' },
  // Throttling: cloud API rate limit, spam rate limit, pair rate limit, generic "too many calls".
  '130429': { ferryCode: 'WA005', action: 'backoff' },
  '131056': { ferryCode: 'WA005', action: 'backoff' },
  '80007': { ferryCode: 'WA005', action: 'backoff' },
  '4': { ferryCode: 'WA005', action: 'backoff' },
  // Invalid parameter / recipient number the platform refuses as a number.
  '100': { ferryCode: 'VALIDATION_ERROR', action: 'fail' },
  '131009': { ferryCode: 'VALIDATION_ERROR', action: 'fail' },
  '131030': { ferryCode: 'WA001', action: 'fail', message: 'the recipient number is not valid' },
  // Temporary platform trouble.
  '131000': { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  '131016': { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  '2': { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  // Bad credentials: nothing this message can fix.
  '190': { ferryCode: 'PROVIDER_AUTH_FAILED', action: 'fail', message: 'the access token was refused' },
  // Template trouble.
  '132000': { ferryCode: 'TEMPLATE_PARAMS_MISMATCH', action: 'fail' },
  '132001': { ferryCode: 'TEMPLATE_NOT_FOUND', action: 'fail' },
});

/**
 * A Cloud API error answer as a SendResult. 131053 is retried once (`later`: only this message waits) and fails as
 * WA004 on the attempt after; everything else as the table says.
 */
export function classifyMetaError(input: ClassifyInput, attemptsBefore: number): Exclude<SendResult, { kind: 'sent' }> {
  const r = META_ERRORS.classify(input);
  if (String(input.providerCode) === MEDIA_DOWNLOAD_ERROR && attemptsBefore >= 1) return { kind: 'fail', code: r.code, providerCode: r.providerCode, message: r.message };
  return r;
}
