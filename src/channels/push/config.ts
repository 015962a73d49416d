/** The `push` section of the config, declared by the module (index.ts) and merged into the one schema at boot (src/config/module-sections.ts). */
export const pushConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    maxDevicesPerUser: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 10,
      description: "devices one user (userId) of an account may have; registering one more drops that user's oldest (invalid ones first)",
    },
    simulator: {
      type: 'string',
      enum: ['auto', 'on', 'off'],
      default: 'auto',
      description: "FCM and APNs simulators for apps without real credentials: auto = in the embedded default only; on = always; off = never",
    },
    retentionDays: { type: 'integer', minimum: 1, maximum: 3650, default: 30, description: 'completed sends (and their per-device outcomes) older than this are deleted' },
    purgeIntervalSeconds: { type: 'integer', minimum: 10, default: 3600, description: 'how often sends past retentionDays are deleted (one instance of a cluster at a time)' },
    pausedRecheckSeconds: {
      type: 'integer',
      minimum: 1,
      maximum: 3600,
      default: 30,
      description: 'how often the batches of an app whose credentials were refused look whether they changed',
    },
    caFile: {
      type: ['string', 'null'],
      default: null,
      description: "a PEM file of CA certificates trusted beside the system's for apps' own endpoints (a relay with a private CA)",
    },
    batchSize: { type: 'integer', minimum: 1, maximum: 5000, default: 500, description: 'devices per batch: one outbound job sends a batch of one app and service' },
    fanOutPageSize: { type: 'integer', minimum: 1, maximum: 50_000, default: 2000, description: "devices of a topic read per fan-out transaction (the fan-out's memory, whatever the topic's size)" },
    concurrency: { type: 'integer', minimum: 1, maximum: 1000, default: 128, description: 'requests of one batch in flight at once (APNs multiplexes them on one HTTP/2 session; FCM on kept-alive connections)' },
    batchesInFlight: { type: 'integer', minimum: 1, maximum: 256, default: 8, description: 'batches each service sends at once in one instance' },
    inlineWaitMs: { type: 'integer', minimum: 0, maximum: 30_000, default: 3000, description: "how long POST /send to one device waits for the service's answer before answering `queued` (0: never waits)" },
    deadlineSeconds: { type: 'integer', minimum: 60, maximum: 2_419_200, default: 86_400, description: "a send's devices not reached by then fail (DEADLINE_EXCEEDED); a shorter ttlSeconds shortens it (60 s at least)" },
    maxRounds: { type: 'integer', minimum: 1, maximum: 20, default: 6, description: 'rounds a device gets when the service answers it with a retryable error (429, 503) while other devices of its batch went through' },
    retryBaseMs: { type: 'integer', minimum: 10, maximum: 600_000, default: 2000, description: 'delay before the second round, doubling each round, unless the service sent Retry-After' },
  },
} as const;

export interface PushConfig {
  maxDevicesPerUser: number;
  simulator: 'auto' | 'on' | 'off';
  retentionDays: number;
  purgeIntervalSeconds: number;
  pausedRecheckSeconds: number;
  caFile: string | null;
  batchSize: number;
  fanOutPageSize: number;
  concurrency: number;
  batchesInFlight: number;
  inlineWaitMs: number;
  deadlineSeconds: number;
  maxRounds: number;
  retryBaseMs: number;
}
