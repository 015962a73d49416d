/** The `messenger` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
const nullableString = { type: ['string', 'null'], default: null } as const;

export const messengerConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    simulator: {
      type: 'string',
      enum: ['auto', 'on', 'off'],
      default: 'auto',
      description: 'the embedded messenger platform simulator: auto runs it when no provider baseUrl is set',
    },
    simulatorStatusDelayMs: { type: 'integer', minimum: 0, default: 50, description: 'embedded simulator: delay between a send and each status webhook' },
    baseUrl: { ...nullableString, description: "the Cloud API's base URL (https://graph.facebook.com); null: the embedded simulator" },
    apiVersion: { type: 'string', pattern: '^v[0-9]+\\.[0-9]+$', default: 'v21.0', description: 'the Graph API version in request paths' },
    phoneNumberId: { type: 'string', minLength: 1, default: '100000000000001', description: 'the business phone number id messages are sent from' },
    businessAccountId: { type: 'string', minLength: 1, default: '200000000000001', description: 'the WhatsApp business account id (templates, quality)' },
    accessToken: { ...nullableString, description: 'the Cloud API access token (Bearer); give it sealed (ferry messenger seal prints sealed:…, encrypted with a key derived from the daemon secret key), or plain; never logged, never stored' },
    appSecret: { ...nullableString, description: "the app secret: X-Hub-Signature-256 of the provider's webhooks is verified with it; may be sealed (sealed:…)" },
    mediaCaFile: { ...nullableString, description: 'a PEM file of extra CA certificates trusted when fetching media links (private CAs, tests)' },
    verifyToken: { ...nullableString, description: 'the hub.verify_token the webhook handshake must present; may be sealed (sealed:…)' },
    account: {
      ...nullableString,
      description:
        "the account (id or name) that owns the config number; null: it serves every account without a business number of its own (ferry messenger numbers add), and what comes in on it is shared by them",
    },
    inlineAttemptMs: {
      type: 'integer',
      minimum: 0,
      maximum: 30_000,
      default: 3000,
      description: "a send's first attempt is made at once and its answer waits this long for the platform's wamid (0: the answer never waits; wamid null)",
    },
  },
} as const;

export interface MessengerConfig {
  simulator: 'auto' | 'on' | 'off';
  simulatorStatusDelayMs: number;
  baseUrl: string | null;
  apiVersion: string;
  phoneNumberId: string;
  businessAccountId: string;
  accessToken: string | null;
  appSecret: string | null;
  verifyToken: string | null;
  mediaCaFile: string | null;
  account: string | null;
  inlineAttemptMs: number;
}
