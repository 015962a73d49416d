/** The `shortlink` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
export const shortlinkConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    host: { type: 'string', default: '127.0.0.1', description: 'address the public redirect listener binds' },
    port: { type: 'integer', minimum: 0, maximum: 65535, default: 8090, description: 'port of the public redirect listener (GET/HEAD /{slug}); 0 = any free port' },
    baseUrl: { type: ['string', 'null'], default: null, description: "public address of the redirect listener that shortUrl starts with; null = the listener's own address" },
    trustedProxies: { type: 'string', default: '', description: 'comma-separated addresses or CIDR blocks of proxies whose X-Forwarded-For is believed for the click address' },
    denyHosts: { type: 'string', default: '', description: 'comma-separated destination hosts refused (each with its subdomains)' },
    cacheTtlSeconds: { type: 'integer', minimum: 1, default: 60, description: 'how long a redirect instance keeps a link without asking storage (changes reach other instances at once through Redis)' },
    clickBatchMs: { type: 'integer', minimum: 10, maximum: 60_000, default: 1000, description: 'clicks are written in one batch this often: a crash loses at most this window of clicks' },
    clickBatchMax: { type: 'integer', minimum: 1, default: 500, description: 'a batch is written as soon as this many clicks wait' },
    passwordAttemptsPerMinute: { type: 'integer', minimum: 1, default: 10, description: 'password tries per client address and slug per minute' },
    passwordAttemptsPerLinkPerMinute: { type: 'integer', minimum: 1, default: 60, description: 'password tries per slug per minute, all client addresses together' },
    passwordChecksAtOnce: { type: 'integer', minimum: 1, default: 2, description: 'password checks (scrypt, on the threadpool fs and dns share) running at once per instance' },
    passwordChecksQueued: { type: 'integer', minimum: 0, default: 32, description: 'password checks waiting for one of those; beyond it a try is answered 429' },
  },
} as const;

export interface ShortlinkConfig {
  host: string;
  port: number;
  baseUrl: string | null;
  trustedProxies: string;
  denyHosts: string;
  cacheTtlSeconds: number;
  clickBatchMs: number;
  clickBatchMax: number;
  passwordAttemptsPerMinute: number;
  passwordAttemptsPerLinkPerMinute: number;
  passwordChecksAtOnce: number;
  passwordChecksQueued: number;
}
