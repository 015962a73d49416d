import type { MessageStatus } from '../ledger/types.js';

/**
 * The one event catalogue, named `<channel>.<event>`. SMS, OTP and webhook.test are built in (below); every other
 * product registers its own family at load time with registerEventTypes (messenger.*, email.*, push.*, ...), and gives
 * the names a static type by adding them to ProductEventTypes. An endpoint subscribing to `*` receives every type,
 * registered ones included.
 */
export const BUILTIN_EVENT_TYPES = [
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

export type BuiltinEventType = (typeof BUILTIN_EVENT_TYPES)[number];

/**
 * Event types of the products, by declaration merging, so their names are checked like the built-in ones:
 *
 *   declare module '../../events/catalogue.js' {
 *     interface ProductEventTypes { 'messenger.sent': true; 'messenger.read': true }
 *   }
 *
 * The runtime list is what registerEventTypes registered; isEventType tells the two apart from any other string.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ProductEventTypes {}

export type EventType = BuiltinEventType | (keyof ProductEventTypes & string);

const BUILTIN_DESCRIPTIONS: Readonly<Record<BuiltinEventType, string>> = {
  'sms.queued': 'the message was accepted (data.status queued, or scheduled for a later send)',
  'sms.sent': 'the message was handed to an operator (status submitted)',
  'sms.delivered': 'the operator reported delivery to the handset',
  'sms.undelivered': 'the operator reported that the message could not be delivered',
  'sms.failed': 'the message failed, was rejected or expired (data.status says which; data.error the cause)',
  'sms.inbound': 'a message arrived at a number the account owns',
  'otp.requested': 'an OTP code was sent',
  'otp.verified': 'an OTP code was verified',
  'otp.failed': 'a wrong code was tried (data.reason INVALID_PIN with data.attemptsRemaining, 0 for the one that used the last attempt; OTP_LOCKED for a verify after that)',
  'otp.expired': 'an OTP expired without being verified',
  'webhook.test': 'sent by POST /v1/webhooks/{id}/test',
};

// The live lists: built-in types first, then registered ones in registration order. Exported read-only below.
const types: EventType[] = [...BUILTIN_EVENT_TYPES];
const known = new Set<string>(types);
const descriptions: Record<string, string> = { ...BUILTIN_DESCRIPTIONS };
const dataSchemas: Record<string, Record<string, unknown>> = {};

/** Every event type, built-in and registered (a live list: registrations after import show up in it). */
export const EVENT_TYPES: readonly EventType[] = types;

export const EVENT_DESCRIPTIONS: Readonly<Record<EventType, string>> = descriptions as Record<EventType, string>;

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
  return known.has(s);
}

/** What a product says about one of its event types. */
export interface EventTypeDefinition {
  description: string;
  /** JSON schema of `data` (shown by GET /v1/webhooks/event-types); default: an open object. */
  data?: Record<string, unknown>;
}

const EVENT_NAME = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_.]*$/;
const RESERVED_FAMILIES = new Set(BUILTIN_EVENT_TYPES.map((t) => t.slice(0, t.indexOf('.'))));

/**
 * Adds a product's event types to the catalogue (call it when the product's module loads, before endpoints subscribe).
 * Names are `<product>.<event>` in lower case; the built-in families (sms, otp, webhook) are closed. Registering a
 * name again with the same description is a no-op, with another one an error. Returns the names.
 */
export function registerEventTypes(defs: Readonly<Record<string, string | EventTypeDefinition>>): EventType[] {
  const entries = Object.entries(defs).map(([name, d]) => [name, typeof d === 'string' ? { description: d } : d] as const);
  for (const [name, d] of entries) {
    if (!EVENT_NAME.test(name)) throw new Error(`event type ${JSON.stringify(name)}: expected <product>.<event> in lower case`);
    if (RESERVED_FAMILIES.has(name.slice(0, name.indexOf('.')))) throw new Error(`event type ${name}: the ${name.slice(0, name.indexOf('.'))}.* family is built in`);
    if (!d.description) throw new Error(`event type ${name}: a description is required`);
    if (known.has(name) && descriptions[name] !== d.description) throw new Error(`event type ${name} is already registered with another description`);
  }
  for (const [name, d] of entries) {
    if (known.has(name)) continue;
    known.add(name);
    types.push(name as EventType);
    descriptions[name] = d.description;
    dataSchemas[name] = d.data ?? { type: 'object', additionalProperties: true };
  }
  return entries.map(([name]) => name as EventType);
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
const BUILTIN_DATA_SCHEMAS: Readonly<Record<BuiltinEventType, Record<string, unknown>>> = {
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
Object.assign(dataSchemas, BUILTIN_DATA_SCHEMAS);

export const EVENT_DATA_SCHEMAS: Readonly<Record<EventType, Record<string, unknown>>> = dataSchemas as Record<EventType, Record<string, unknown>>;

/** The body every delivery POSTs. */
export const EVENT_PAYLOAD_SCHEMA = {
  type: 'object',
  required: ['id', 'type', 'createdAt', 'accountId', 'data'],
  properties: {
    id: { type: 'string', description: 'event id, prefix evt_; also the webhook-id header (deduplicate on it: delivery is at least once)' },
    type: { type: 'string', enum: EVENT_TYPES },
    createdAt: { type: 'string', format: 'date-time' },
    accountId: str,
    data: { type: 'object', additionalProperties: true, description: 'per type: see the event types list' },
  },
} as const;

/** The catalogue as a Markdown table (route descriptions in the OpenAPI document). */
export function eventCatalogueMarkdown(): string {
  return ['| type | when |', '|---|---|', ...EVENT_TYPES.map((t) => `| ${t} | ${EVENT_DESCRIPTIONS[t]} |`)].join('\n');
}
