/** The `sms` section of the config (one part of the one JSON schema, src/config/schema.ts). */
export const smsConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    defaultCountry: { type: ['string', 'null'], pattern: '^[A-Z]{2}$', default: null, description: 'country for local numbers when the account sets none' },
    scheduleHorizonDays: { type: 'integer', minimum: 1, default: 30, description: 'how far ahead scheduledAt may be' },
    showUpstreams: { type: 'boolean', default: false, description: 'name the upstream in the REST status API' },
  },
} as const;

export interface SmsConfig {
  defaultCountry: string | null;
  scheduleHorizonDays: number;
  showUpstreams: boolean;
}
