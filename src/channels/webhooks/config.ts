/** The `webhooks` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
export const webhooksConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    allowPrivateTargets: {
      type: ['boolean', 'string'],
      enum: ['auto', true, false],
      default: 'auto',
      description:
        'allow http:// and private or loopback webhook targets. auto: only with the embedded database and the API on loopback with no proxy (a developer machine); true/false decide by name',
    },
    timeoutMs: { type: 'integer', minimum: 100, default: 10000, description: 'per-attempt timeout of a webhook POST' },
    maxConcurrencyPerEndpoint: { type: 'integer', minimum: 1, maximum: 100, default: 4, description: 'requests in flight to one endpoint' },
    maxConcurrency: { type: 'integer', minimum: 1, maximum: 10000, default: 64, description: 'requests in flight to all endpoints (per instance)' },
    disableAfterHours: { type: 'number', exclusiveMinimum: 0, default: 72, description: 'an endpoint failing continuously this long is disabled' },
    retrySchedule: {
      type: 'string',
      pattern: '^\\s*\\d+(ms|s|m|h)(\\s*,\\s*\\d+(ms|s|m|h))*\\s*$',
      default: '5s,30s,2m,10m,1h,6h,24h',
      description: 'delays before each retry (ms, s, m, h); after the last one a delivery is dead. Each delay gets ±20% jitter',
    },
  },
} as const;

export interface WebhooksConfig {
  allowPrivateTargets: boolean | 'auto';
  timeoutMs: number;
  maxConcurrencyPerEndpoint: number;
  maxConcurrency: number;
  disableAfterHours: number;
  retrySchedule: string;
}
