/**
 * The core's configuration schema: one JSON schema with defaults. With the sections the modules declare
 * (buildConfigSchema, module-sections.ts) it drives validation (every bad key reported at once, with its path), the
 * environment overrides (FERRY_<PATH> for every scalar key) and the documentation in config/ferry.example.yaml.
 */

import { NUMBER_VALIDATIONS, type NumberValidation } from '../numbers/number-validation.js';

const port = (def: number) => ({ type: 'integer', minimum: 0, maximum: 65535, default: def }) as const;
const host = { type: 'string', minLength: 1, default: '127.0.0.1' } as const;
const nullableString = { type: ['string', 'null'], default: null } as const;

const upstream = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'host', 'port', 'systemId', 'password'],
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
    host: { type: 'string', minLength: 1 },
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    tls: { type: 'boolean', default: false },
    systemId: { type: 'string', maxLength: 15 },
    password: { type: 'string', maxLength: 8 },
    systemType: { type: 'string', maxLength: 12, default: '' },
    bindMode: { enum: ['transceiver', 'transmitter+receiver'], default: 'transceiver' },
    binds: { type: 'integer', minimum: 1, maximum: 64, default: 1 },
    window: { type: 'integer', minimum: 1, maximum: 10000, default: 50 },
    maxTps: { type: 'integer', minimum: 0, default: 0 },
    enquireLinkSeconds: { type: 'integer', minimum: 1, default: 30 },
    responseTimeoutMs: { type: 'integer', minimum: 100, default: 10000 },
    reconnect: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        initialMs: { type: 'integer', minimum: 10, default: 1000 },
        maxMs: { type: 'integer', minimum: 10, default: 60000 },
      },
    },
    sourceTon: { type: 'integer', minimum: 0, maximum: 6 },
    sourceNpi: { type: 'integer', minimum: 0, maximum: 18 },
    destTon: { type: 'integer', minimum: 0, maximum: 6, default: 1 },
    destNpi: { type: 'integer', minimum: 0, maximum: 18, default: 1 },
    defaultDataCoding: { type: 'integer', minimum: 0, maximum: 255, default: 0 },
    usePayloadTlv: { type: 'boolean', default: false },
    receiptIdFormat: { enum: ['hex', 'dec', 'as-is'], default: 'as-is' },
    receiptQuery: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description:
        'query_sm for messages whose receipt is overdue (lost when a bind closed, e.g. in a crash), answers recorded like receipts: enabled (true), afterSeconds (600), intervalSeconds (300, doubling), maxPerSecond (10), maxAttempts (5); see docs/smpp.md',
      properties: {
        enabled: { type: 'boolean', default: true, description: 'false for an SMSC that does not answer query_sm' },
        afterSeconds: { type: 'integer', minimum: 1, default: 600, description: 'a message still submitted this long after its submit is asked about: set it well past the usual receipt delay' },
        intervalSeconds: { type: 'integer', minimum: 1, default: 300, description: 'wait before asking again after a non-final answer or an error; doubles each time' },
        maxPerSecond: { type: 'integer', minimum: 1, default: 10, description: 'query_sm per second to this upstream, every instance together' },
        maxAttempts: { type: 'integer', minimum: 1, maximum: 100, default: 5, description: 'queries per message before Ferry stops asking (receiptTimeoutHours still expires it)' },
      },
    },
  },
} as const;
/** Shared with the admin API, so a runtime upstream is validated (and defaulted) exactly like one in the file. */
export const upstreamSchema = upstream;

const routeRule = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'upstreams'],
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
    match: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        prefix: { type: 'array', items: { type: 'string', pattern: '^[0-9]{1,15}$' } },
        account: { type: 'array', items: { type: 'string' } },
        sender: { type: 'array', items: { type: 'string' } },
        priority: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 3 } },
      },
    },
    upstreams: { type: 'array', minItems: 1, items: { type: 'string' } },
    weights: { type: 'array', items: { type: 'integer', minimum: 0 } },
    numberValidation: { enum: NUMBER_VALIDATIONS, description: 'recipient check for messages this rule routes (strict, possible, off); the stricter of it and the account\'s applies' },
  },
} as const;

/** The core's sections; a product's section is declared by its module (ChannelModule.config). */
export const coreConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    dataDir: { type: 'string', minLength: 1, default: './data', description: 'embedded database, admin token and secret key live here' },
    log: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
      },
    },
    http: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host,
        port: port(8080),
        bodyLimitBytes: { type: 'integer', minimum: 1024, default: 5 * 1024 * 1024 },
        trustProxy: {
          type: ['boolean', 'string', 'array'],
          items: { type: 'string' },
          default: false,
          description: 'false, or the reverse proxies whose X-Forwarded-For is believed (read right to left): addresses, CIDR blocks, loopback, private (env: comma-separated); true is read as [loopback, private] with a warning',
        },
        publicUrl: { ...nullableString, description: 'base address clients use, written into the OpenAPI servers list' },
        rateLimit: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            perKeyPerSecond: { type: 'integer', minimum: 0, default: 2000, description: '0 disables the per-key limit' },
            burst: { type: 'integer', minimum: 1, default: 4000 },
          },
        },
      },
    },
    admin: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host,
        port: port(9090),
        token: { ...nullableString, description: 'bearer token for the admin API; generated into dataDir/admin.token when unset' },
      },
    },
    smpp: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host,
        port: port(2775),
        tls: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: 'boolean', default: false },
            port: port(3550),
            cert: nullableString,
            key: nullableString,
          },
        },
        idleTimeoutSeconds: { type: 'integer', minimum: 5, default: 120, description: 'a customer session silent this long is closed' },
        enquireLinkSeconds: { type: 'integer', minimum: 0, default: 30, description: 'Ferry sends enquire_link to a customer silent this long; 0 never' },
        maxSessions: { type: 'integer', minimum: 1, default: 1000, description: 'customer connections at once (all accounts)' },
        maxSessionsPerAddress: { type: 'integer', minimum: 1, default: 10, description: 'customer connections at once from one address, bound or not; more are closed at accept' },
        bindTimeoutSeconds: { type: 'number', minimum: 0.1, default: 10, description: 'a customer connection that has not bound this long after it opened is closed' },
        bindGuard: {
          type: 'object',
          additionalProperties: false,
          default: {},
          description:
            'slows password guessing: failed binds are counted per (address, system_id); from `failures` on, that pair\'s binds get ESME_RBINDFAIL unchecked (the right password too) for a cool-down that doubles per further failure',
          properties: {
            failures: { type: 'integer', minimum: 1, default: 5, description: 'failed binds of one system_id from one address that start the first cool-down' },
            firstCooldownSeconds: { type: 'number', minimum: 0.001, default: 1 },
            maxCooldownSeconds: { type: 'number', minimum: 0.001, default: 900 },
            forgetSeconds: { type: 'number', minimum: 0.001, default: 900, description: 'the failures of a pair are forgotten this long after its last failure or cool-down' },
            addressFailures: { type: 'integer', minimum: 1, default: 20, description: 'failed binds from one address across all system_ids that cool the whole address down (same cool-downs)' },
          },
        },
        receiptRetentionHours: {
          type: 'number',
          minimum: 0,
          default: 72,
          description: 'how long receipts and MO messages wait for a customer bind before they are dropped (counted)',
        },
        upstreams: { type: 'array', items: upstream, default: [] },
        simulator: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: {
              enum: ['auto', 'on', 'off'],
              default: 'auto',
              description:
                'auto: run the embedded SMSC simulator as the upstream only while no real upstream exists and none ever did (config file or admin API); on: run it by name (only rules naming "embedded" alone send to it once real upstreams exist); off: never',
            },
            receiptDelayMs: { type: 'integer', minimum: 0, default: 200 },
          },
        },
      },
    },
    routing: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: { rules: { type: 'array', items: routeRule, default: [] } },
    },
    messages: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        defaultAccountTps: { type: 'integer', minimum: 0, default: 1000, description: 'submits per second per account unless the account sets its own; 0 unlimited' },
        maxAttempts: { type: 'integer', minimum: 1, maximum: 100, default: 10, description: 'failed upstream attempts before a message fails (waits on back-pressure do not count)' },
        maxQueueHours: { type: 'number', minimum: 0.01, default: 48, description: 'a message without a validity period expires after this long unsent' },
        receiptTimeoutHours: { type: 'number', minimum: 0, default: 48, description: 'a submitted message with no receipt after this long is expired (NO_RECEIPT); 0 never' },
        maxBacklog: { type: 'integer', minimum: 1, default: 200000, description: 'queued messages beyond which new submits are refused (ESME_RTHROTTLED / 429) while every window is full' },
        accountMetrics: {
          type: 'integer',
          minimum: 0,
          maximum: 10000,
          default: 200,
          description: 'accounts with series of their own in the per-account message metrics, the first this instance counts; later ones are counted as _other (0: all as _other)',
        },
      },
    },
    pricing: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'SMS prices per segment in the account currency; the admin API (PUT /admin/pricing) can replace this table at runtime',
      properties: {
        defaultPrice: { type: ['number', 'null'], minimum: 0, default: null, description: 'per segment when no prefix matches; null: unpriced (free)' },
        entries: {
          type: 'array',
          default: [],
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['prefix', 'price'],
            properties: {
              prefix: { type: 'string', pattern: '^[0-9]{0,15}$' },
              price: { type: 'number', minimum: 0 },
              route: { type: 'string' },
            },
          },
        },
      },
    },
    billing: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        refundOnFailure: { type: 'boolean', default: true, description: 'credit back messages that end failed or rejected (never delivered upstream)' },
      },
    },
    dispatch: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        batch: { type: 'integer', minimum: 1, maximum: 5000, default: 256, description: 'messages leased from the queue per call' },
        leaseSeconds: { type: 'integer', minimum: 5, default: 120, description: 'a leased message not recorded within this comes back to the queue' },
        reconcileSeconds: { type: 'integer', minimum: 1, default: 30, description: 'how often accepted messages missing from the queue are pushed again' },
        reconcileStaleSeconds: { type: 'integer', minimum: 1, default: 60, description: 'a queued message untouched this long is pushed again (pushing is idempotent)' },
      },
    },
    outbound: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'the outbound pipeline of messenger and email: its reconciler fails jobs past their deadline that nobody holds',
      properties: {
        reconcileIntervalSeconds: { type: 'integer', minimum: 1, default: 30, description: 'how often pending jobs past their deadline that nobody holds are failed' },
        staleSeconds: { type: 'integer', minimum: 1, default: 60, description: 'no longer used (the workers claim jobs from the table; nothing is pushed again); accepted so that existing configurations load' },
      },
    },
    retention: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'rows in a final state older than this are purged (batched, one instance at a time); 0 keeps them forever',
      properties: {
        days: { type: 'integer', minimum: 0, default: 90, description: 'default for every family below; 0 = keep forever' },
        outbound: { type: ['integer', 'null'], minimum: 0, default: null, description: 'outbound jobs and their history; null: retention.days' },
        webhooks: { type: ['integer', 'null'], minimum: 0, default: null, description: 'webhook events and their deliveries; null: retention.days' },
        sms: { type: ['integer', 'null'], minimum: 0, default: null, description: 'SMS messages, their events, parts and correlations; null: retention.days' },
        messenger: { type: ['integer', 'null'], minimum: 0, default: null, description: 'messenger messages and inbound messages; null: retention.days' },
        email: { type: ['integer', 'null'], minimum: 0, default: null, description: 'email messages and their events; null: retention.days' },
        ussd: { type: ['integer', 'null'], minimum: 0, default: null, description: 'ended USSD sessions; null: retention.days' },
        shortlink: { type: ['integer', 'null'], minimum: 0, default: null, description: 'short link clicks and hourly rollups; null: retention.days' },
        logs: { type: ['integer', 'null'], minimum: 0, default: null, description: 'request log sessions; null: retention.days' },
        intervalSeconds: { type: 'integer', minimum: 0, default: 3600, description: 'seconds between purge passes; 0 = never purge' },
        batchRows: { type: 'integer', minimum: 1, maximum: 100000, default: 1000, description: 'rows deleted per statement' },
        maxRowsPerPass: { type: 'integer', minimum: 1, default: 100000, description: 'rows deleted per table per pass at most (the rest waits for the next pass)' },
      },
    },
    database: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        url: { ...nullableString, description: 'Postgres URL; unset = embedded PGlite in dataDir/pg' },
        readUrl: {
          ...nullableString,
          description:
            'Postgres URL of a streaming replica for reads that tolerate its lag (request logs, short link analytics, SMS status and lists), on a read-only pool half database.poolSize; reads go to the primary while it is unreachable. Unset = every read on database.url; needs database.url',
        },
        poolSize: { type: 'integer', minimum: 1, maximum: 200, default: 10 },
        commitsInFlight: {
          type: 'integer',
          minimum: 1,
          maximum: 16,
          default: 1,
          description: 'ledger status-change batches (submit records, receipts) written at once on Postgres; 1 gives the largest batches and the least database work per message, more can help a many-core database server',
        },
        preparedStatements: {
          type: 'boolean',
          default: true,
          description: 'run the hot path\'s statements as named prepared statements (parsed once per Postgres connection or by the embedded database, plans kept); turn off behind a pooler in transaction mode that does not carry them',
        },
        pipeline: {
          type: 'boolean',
          default: true,
          description: "send a transaction's statements to Postgres back to back instead of waiting for each answer (fewer round trips per ledger batch); turn off behind a proxy that does not handle pipelined statements",
        },
        maintenanceSeconds: {
          type: 'integer',
          minimum: 0,
          default: 5,
          description: 'how often high-churn tables (outboxes, queue, OTP codes) are vacuumed and growing ones analyzed when they need it; the ledger tables are looked at every sixth pass (every 60th on embedded storage); 0 = leave it to autovacuum (embedded storage has none)',
        },
      },
    },
    redis: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        url: { ...nullableString, description: 'Redis URL; unset = embedded queue, OTP store and throttle' },
        keyPrefix: { type: 'string', default: 'ferry:' },
        cluster: {
          type: 'boolean',
          default: false,
          description: 'redis.url names seed nodes of a Redis Cluster (comma-separated, e.g. redis://10.0.0.1:7001,10.0.0.2:7001); pub/sub then uses sharded SPUBLISH/SSUBSCRIBE (Redis 7)',
        },
        queueShards: {
          type: 'integer',
          minimum: 1,
          maximum: 64,
          default: 1,
          description: 'shards of each Redis queue (the SMS message lanes; outbound jobs and webhook events live in Postgres), each its own hash tag so one busy queue spreads over the masters of a Cluster; raising it is safe at any time, lowering it still serves what the higher shards hold',
        },
      },
    },
    security: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        secretKey: {
          ...nullableString,
          description: 'base64 or hex, 32 bytes: keys the API-secret hash and encrypts OTP codes; generated into dataDir/secret.key when unset. Instances sharing a database must share it.',
        },
        allowPrivateTargets: {
          type: ['boolean', 'string', 'null'],
          enum: ['auto', true, false, null],
          default: null,
          description:
            'the SSRF guard of every URL a customer gives (webhook endpoints, USSD apps, media links): allow http:// and private or loopback targets. auto: only with the embedded database and the API on loopback with no proxy; null: as webhooks.allowPrivateTargets says (its historic place)',
        },
      },
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        failureLimit: { type: 'integer', minimum: 1, default: 20, description: 'failed authentications per client address per window before further failed attempts get 429 (valid credentials are always served)' },
        failureWindowSeconds: { type: 'integer', minimum: 1, default: 60 },
        rotationGraceSeconds: { type: 'integer', minimum: 0, default: 86400, description: 'how long a rotated secret keeps working' },
        cacheSeconds: { type: 'integer', minimum: 0, default: 5, description: 'how long a verified key is trusted before it is read again' },
      },
    },
    shutdown: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        drainTimeoutMs: { type: 'integer', minimum: 0, default: 10000 },
      },
    },
    roles: {
      type: ['array', 'string'],
      items: { type: 'string', enum: ['all', 'api', 'smpp', 'workers', 'realtime', 'media'] },
      default: 'all',
      description:
        'process roles this instance runs (docs/operations.md, Process roles): all, or a list of api, smpp, workers, realtime, media (env FERRY_ROLE or FERRY_ROLES, comma-separated; ferry start --role). Split roles need Postgres and Redis',
    },
  },
} as const;

export type RetentionFamily = 'outbound' | 'webhooks' | 'sms' | 'messenger' | 'email' | 'ussd' | 'shortlink' | 'logs';
export type RetentionConfig = { days: number; intervalSeconds: number; batchRows: number; maxRowsPerPass: number } & Record<RetentionFamily, number | null>;

export interface UpstreamConfig {
  id: string;
  host: string;
  port: number;
  tls: boolean;
  systemId: string;
  password: string;
  systemType: string;
  bindMode: 'transceiver' | 'transmitter+receiver';
  binds: number;
  window: number;
  maxTps: number;
  enquireLinkSeconds: number;
  responseTimeoutMs: number;
  reconnect: { initialMs: number; maxMs: number };
  sourceTon?: number;
  sourceNpi?: number;
  destTon: number;
  destNpi: number;
  defaultDataCoding: number;
  usePayloadTlv: boolean;
  receiptIdFormat: 'hex' | 'dec' | 'as-is';
  /** Filled in by the schema's defaults; absent on configs built in code, which then get the defaults too. */
  receiptQuery?: ReceiptQueryConfig;
}

/** query_sm for overdue receipts, per upstream (see receipt-query-sweep.ts). */
export interface ReceiptQueryConfig {
  enabled: boolean;
  afterSeconds: number;
  intervalSeconds: number;
  maxPerSecond: number;
  maxAttempts: number;
}

export interface RouteRuleConfig {
  id: string;
  match: { prefix?: string[]; account?: string[]; sender?: string[]; priority?: number[] };
  upstreams: string[];
  weights?: number[];
  /** Recipient check for messages this rule routes; unset: the account's, else the ingress default. */
  numberValidation?: NumberValidation;
}

/**
 * The loaded configuration: the core's sections, typed, and the sections of the modules (each module reads its own,
 * typed, through `ctx.section<T>()`), unknown here.
 */
export interface FerryConfig {
  readonly [moduleSection: string]: unknown;
  dataDir: string;
  log: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' };
  http: {
    host: string;
    port: number;
    bodyLimitBytes: number;
    /** Trusted proxies (addresses, CIDR blocks, named ranges), or false; normalised by the loader (src/http/client-address.ts). */
    trustProxy: false | string[];
    publicUrl: string | null;
    rateLimit: { perKeyPerSecond: number; burst: number };
  };
  admin: { host: string; port: number; token: string | null };
  smpp: {
    host: string;
    port: number;
    tls: { enabled: boolean; port: number; cert: string | null; key: string | null };
    idleTimeoutSeconds: number;
    enquireLinkSeconds: number;
    maxSessions: number;
    maxSessionsPerAddress: number;
    bindTimeoutSeconds: number;
    bindGuard: { failures: number; firstCooldownSeconds: number; maxCooldownSeconds: number; forgetSeconds: number; addressFailures: number };
    receiptRetentionHours: number;
    upstreams: UpstreamConfig[];
    simulator: { enabled: 'auto' | 'on' | 'off'; receiptDelayMs: number };
  };
  routing: { rules: RouteRuleConfig[] };
  messages: { defaultAccountTps: number; maxAttempts: number; maxQueueHours: number; receiptTimeoutHours: number; maxBacklog: number; accountMetrics: number };
  dispatch: { batch: number; leaseSeconds: number; reconcileSeconds: number; reconcileStaleSeconds: number };
  pricing: { defaultPrice: number | null; entries: Array<{ prefix: string; price: number; route?: string }> };
  billing: { refundOnFailure: boolean };
  outbound: { reconcileIntervalSeconds: number; staleSeconds: number };
  retention: RetentionConfig;
  database: { url: string | null; readUrl: string | null; poolSize: number; commitsInFlight: number; preparedStatements: boolean; pipeline: boolean; maintenanceSeconds: number };
  redis: { url: string | null; keyPrefix: string; cluster: boolean; queueShards: number };
  security: { secretKey: string | null; allowPrivateTargets: boolean | 'auto' | null };
  auth: { failureLimit: number; failureWindowSeconds: number; rotationGraceSeconds: number; cacheSeconds: number };
  shutdown: { drainTimeoutMs: number };
  /** Process roles: 'all', a comma-separated string, or a list (src/platform/roles.ts reads it). */
  roles: string | string[];
}
