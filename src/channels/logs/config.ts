/** The `logs` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
export const logsConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    enabled: { type: 'boolean', default: true, description: 'record every /v1 request in the request logs (GET /v1/logs, the /logs page, key statistics)' },
    retentionDays: { type: 'integer', minimum: 1, maximum: 3650, default: 14, description: 'request log rows older than this are deleted' },
    bodyLimitBytes: { type: 'integer', minimum: 256, maximum: 65536, default: 8192, description: 'request and response bodies are kept up to this many bytes (after redaction)' },
    bufferSize: { type: 'integer', minimum: 100, maximum: 1_000_000, default: 20000, description: 'entries waiting to be written; past it new entries are dropped (ferry_request_logs_dropped_total)' },
    flushMs: { type: 'integer', minimum: 10, maximum: 10000, default: 250, description: 'how long an entry may wait for its batch' },
    purgeIntervalSeconds: { type: 'integer', minimum: 10, default: 600, description: 'how often rows past the retention are deleted' },
    sessionHours: { type: 'integer', minimum: 1, maximum: 168, default: 8, description: 'how long a /logs page sign-in lasts' },
  },
} as const;

export interface LogsConfig {
  enabled: boolean;
  retentionDays: number;
  bodyLimitBytes: number;
  bufferSize: number;
  flushMs: number;
  purgeIntervalSeconds: number;
  sessionHours: number;
}
