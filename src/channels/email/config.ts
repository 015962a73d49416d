/** The `email` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
export const emailConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    smtp: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        url: {
          type: ['string', 'null'],
          default: null,
          description: 'SMTP relay, smtp://user:pass@relay:587 (STARTTLS when offered) or smtps://; null: the embedded mail simulator is the relay',
        },
        maxConnections: { type: 'integer', minimum: 1, maximum: 256, default: 8, description: 'pooled SMTP connections to the relay per instance' },
        relayPerSecond: { type: 'integer', minimum: 0, default: 0, description: 'messages per second to the relay over every instance (0: unlimited)' },
        accountPerSecond: { type: 'integer', minimum: 0, default: 0, description: 'messages per second of one account over every instance (0: unlimited)' },
        acceptIsDelivery: {
          type: ['boolean', 'null'],
          default: null,
          description: "the relay's 250 means the receiving server took the mail (delivered); null: true for the simulator, false for a relay (delivered then comes from its DSN)",
        },
      },
    },
    inbound: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host: { type: 'string', default: '127.0.0.1', description: 'address of the SMTP listener for bounces and complaints (the bounce domain MX)' },
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 0, description: 'its port (0: any free port)' },
        maxBytes: { type: 'integer', minimum: 1024, default: 1048576, description: 'largest report accepted' },
        maxRecipients: { type: 'integer', minimum: 1, default: 10, description: 'recipients per report' },
      },
    },
    bounceDomain: { type: 'string', minLength: 3, default: 'bounces.ferry.localhost', description: 'VERP return path b+<messageId>@<bounceDomain>' },
    requireVerifiedDomain: {
      type: ['boolean', 'null'],
      default: null,
      description: 'only domains whose DKIM record is published may send; null: true with a relay, false with the simulator',
    },
    trackingBaseUrl: {
      type: ['string', 'null'],
      default: null,
      description: 'public address of the tracking pixel, click and unsubscribe links; null: http.publicUrl, else the API listener',
    },
    maxConcurrency: { type: 'integer', minimum: 1, maximum: 1024, default: 32, description: 'SMTP sends at once per instance' },
    deadlineHours: { type: 'integer', minimum: 1, default: 72, description: 'a message not accepted by the relay after this is failed' },
    dkimSelector: { type: 'string', pattern: '^[a-z0-9-]{1,63}$', default: 'ferry', description: 'DKIM selector of new sending domains' },
    simulator: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 0, description: 'port of the embedded mail simulator (0: any free port)' },
        reportDelayMs: { type: 'integer', minimum: 0, default: 50, description: 'delay before the simulator mails a DSN or complaint back' },
      },
    },
  },
} as const;

export interface EmailConfig {
  smtp: { url: string | null; maxConnections: number; relayPerSecond: number; accountPerSecond: number; acceptIsDelivery: boolean | null };
  inbound: { host: string; port: number; maxBytes: number; maxRecipients: number };
  bounceDomain: string;
  requireVerifiedDomain: boolean | null;
  trackingBaseUrl: string | null;
  maxConcurrency: number;
  deadlineHours: number;
  dkimSelector: string;
  simulator: { port: number; reportDelayMs: number };
}
