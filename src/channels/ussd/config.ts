/** The `ussd` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
export const ussdConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    appTimeoutMs: { type: 'integer', minimum: 100, maximum: 10_000, default: 3000, description: "hard deadline of a customer's app answering one hop (the network will not wait longer)" },
    apology: {
      type: 'string',
      minLength: 1,
      maxLength: 182,
      default: 'Sorry, this service is not available right now. Please try again later.',
      description: 'the END screen when an app times out, fails or answers malformed text',
    },
    unknownCodeText: { type: 'string', minLength: 1, maxLength: 182, default: 'Unknown service code', description: 'the END screen for a code no account claims' },
    sessionTimeoutSeconds: { type: 'integer', minimum: 5, maximum: 3600, default: 180, description: 'a live session with no hop for this long is ended Incomplete (the network has dropped it)' },
    resumeMinutes: { type: 'integer', minimum: 0, maximum: 1440, default: 0, description: 'a phone dialling again within this of a dropped session continues where it was; 0: off' },
    sweepSeconds: { type: 'integer', minimum: 1, maximum: 600, default: 5, description: 'how often idle sessions are looked for' },
  },
} as const;

export interface UssdConfig {
  appTimeoutMs: number;
  apology: string;
  unknownCodeText: string;
  sessionTimeoutSeconds: number;
  resumeMinutes: number;
  sweepSeconds: number;
}
