import type { MessageStatus } from '../ledger/types.js';

/**
 * The one event catalogue, named `<channel>.<event>`. Later channels add their families here (messenger.*,
 * email.*, voice.*, ussd.*, shortlink.click); an endpoint subscribing to `*` receives every type, new ones included.
 */
export const EVENT_TYPES = [
  'sms.queued',
  'sms.sent',
  'sms.delivered',
  'sms.undelivered',
  'sms.failed',
  'sms.inbound',
  'otp.requested',
  'otp.verified',
  'otp.failed',
  'otp.expired',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const EVENT_DESCRIPTIONS: Readonly<Record<EventType, string>> = {
  'sms.queued': 'the message was accepted (data.status queued, or scheduled for a later send)',
  'sms.sent': 'the message was handed to an operator (status submitted)',
  'sms.delivered': 'the operator reported delivery to the handset',
  'sms.undelivered': 'the operator reported that the message could not be delivered',
  'sms.failed': 'the message failed, was rejected or expired (data.status says which; data.error the cause)',
  'sms.inbound': 'a message arrived at a number the account owns',
  'otp.requested': 'an OTP code was sent',
  'otp.verified': 'an OTP code was verified',
  'otp.failed': 'a wrong code was tried (data.reason INVALID_PIN, or OTP_LOCKED when no attempts are left)',
  'otp.expired': 'an OTP expired without being verified',
  'webhook.test': 'sent by POST /v1/webhooks/{id}/test',
};

/** The SMS event a ledger status change reports; null for changes that have none (cancelled). */
export function smsEventOf(status: MessageStatus): EventType | null {
  switch (status) {
    case 'queued':
    case 'scheduled':
      return 'sms.queued';
    case 'submitted':
      return 'sms.sent';
    case 'delivered':
      return 'sms.delivered';
    case 'undelivered':
      return 'sms.undelivered';
    case 'failed':
    case 'rejected':
    case 'expired':
      return 'sms.failed';
    default:
      return null;
  }
}

export function isEventType(s: string): s is EventType {
  return (EVENT_TYPES as readonly string[]).includes(s);
}

const str = { type: 'string' } as const;
const nullableStr = { type: 'string', nullable: true } as const;

const smsData = {
  type: 'object',
  properties: {
    messageId: { type: 'string', description: 'prefix msg_' },
    reference: { ...nullableStr, description: "the sender's reference" },
    status: { type: 'string', enum: ['queued', 'scheduled', 'submitted', 'delivered', 'undelivered', 'failed', 'rejected', 'expired'] },
    to: str,
    from: str,
    error: { ...nullableStr, description: 'error code of a failure, else null' },
  },
} as const;

const inboundData = {
  type: 'object',
  properties: {
    messageId: { type: 'string', description: 'prefix mo_' },
    from: str,
    to: str,
    text: nullableStr,
    receivedAt: { type: 'string', format: 'date-time' },
  },
} as const;

const otpData = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'the OTP id' },
    accountId: str,
    phone: str,
    at: { type: 'string', format: 'date-time' },
    expiresAt: { type: 'string', format: 'date-time' },
    messageId: { type: 'string', description: 'the SMS that carried the code' },
    metadata: { type: 'object', additionalProperties: true },
    reason: { type: 'string', enum: ['INVALID_PIN', 'OTP_LOCKED'] },
    attemptsRemaining: { type: 'integer' },
  },
} as const;

const testData = { type: 'object', properties: { message: str, webhookId: str } } as const;

/** JSON schema of `data` per type (the OpenAPI document shows them under GET /webhooks/event-types). */
export const EVENT_DATA_SCHEMAS: Readonly<Record<EventType, Record<string, unknown>>> = {
  'sms.queued': smsData,
  'sms.sent': smsData,
  'sms.delivered': smsData,
  'sms.undelivered': smsData,
  'sms.failed': smsData,
  'sms.inbound': inboundData,
  'otp.requested': otpData,
  'otp.verified': otpData,
  'otp.failed': otpData,
  'otp.expired': otpData,
  'webhook.test': testData,
};

/** The body every delivery POSTs. */
export const EVENT_PAYLOAD_SCHEMA = {
  type: 'object',
  required: ['id', 'type', 'createdAt', 'accountId', 'data'],
  properties: {
    id: { type: 'string', description: 'event id, prefix evt_; also the webhook-id header (deduplicate on it: delivery is at least once)' },
    type: { type: 'string', enum: [...EVENT_TYPES] },
    createdAt: { type: 'string', format: 'date-time' },
    accountId: str,
    data: { type: 'object', additionalProperties: true, description: 'per type: see the event types list' },
  },
} as const;

/** The catalogue as a Markdown table (route descriptions in the OpenAPI document). */
export function eventCatalogueMarkdown(): string {
  return ['| type | when |', '|---|---|', ...EVENT_TYPES.map((t) => `| ${t} | ${EVENT_DESCRIPTIONS[t]} |`)].join('\n');
}
