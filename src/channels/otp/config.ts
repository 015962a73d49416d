/** The `otp` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
const nullableString = { type: ['string', 'null'], default: null } as const;

export const otpConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    ussdServiceCode: { type: 'string', pattern: '^[*#0-9]{2,32}$', default: '*889*142#', description: 'USSD service code a phone dials to read its pending OTP' },
    resendCooldownSeconds: { type: 'integer', minimum: 0, default: 60, description: 'wait between sends of one OTP (POST /v1/otp/resend)' },
    requestsPerHour: { type: 'integer', minimum: 1, default: 3, description: 'new OTPs per phone (per account) in any hour' },
    expiredRetentionMinutes: { type: 'integer', minimum: 1, default: 60, description: 'how long after expiry verify still says OTP_EXPIRED (then OTP_NOT_FOUND)' },
    defaultSender: { ...nullableString, description: 'sender ID when a request gives no from; null: from is required' },
  },
} as const;

export interface OtpConfig {
  ussdServiceCode: string;
  resendCooldownSeconds: number;
  requestsPerHour: number;
  expiredRetentionMinutes: number;
  defaultSender: string | null;
}
