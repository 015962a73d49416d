import { NUMBER_VALIDATIONS, type NumberValidation } from '../../numbers/number-validation.js';

/** The `sms` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
export const smsConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    defaultCountry: { type: ['string', 'null'], pattern: '^[A-Z]{2}$', default: null, description: 'country for local numbers when the account sets none' },
    scheduleHorizonDays: { type: 'integer', minimum: 1, default: 30, description: 'how far ahead scheduledAt may be' },
    showUpstreams: { type: 'boolean', default: false, description: 'name the upstream in the REST status API' },
    numberValidation: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        smpp: {
          enum: NUMBER_VALIDATIONS,
          default: 'possible',
          description:
            'recipient check of SMPP submits where neither the account nor the route rule sets one: strict (valid for its country), possible (a possible length for its calling code) or off (3 to 15 digits)',
        },
        rest: { enum: NUMBER_VALIDATIONS, default: 'strict', description: 'recipient check of REST sends where neither the account nor the route rule sets one (OTP requests always need a valid number)' },
      },
    },
  },
} as const;

export interface SmsConfig {
  defaultCountry: string | null;
  scheduleHorizonDays: number;
  showUpstreams: boolean;
  /** The recipient check of each ingress where neither the account nor the route rule sets one. */
  numberValidation: { smpp: NumberValidation; rest: NumberValidation };
}
