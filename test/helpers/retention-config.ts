import type { RetentionConfig } from '../../src/config/schema.js';

/** A retention config for tests: every family kept forever (0) unless given, passes run only when a test asks. */
export function retentionConfig(over: Partial<RetentionConfig> = {}): RetentionConfig {
  return {
    days: 0,
    outbound: 0,
    webhooks: 0,
    sms: 0,
    messenger: 0,
    email: 0,
    ussd: 0,
    shortlink: 0,
    logs: 0,
    intervalSeconds: 0,
    batchRows: 1000,
    maxRowsPerPass: 100_000,
    ...over,
  };
}
