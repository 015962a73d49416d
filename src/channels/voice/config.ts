/** The `voice` section of the config, declared by the module (index.ts) and merged into the one schema at boot. */
const trunkSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'host'],
  properties: {
    name: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', description: 'the trunk id calls and metrics name it by' },
    host: { type: 'string', minLength: 1, description: "the trunk's SIP address (host name or IP)" },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 5060 },
    transport: { type: 'string', enum: ['udp', 'tcp'], default: 'udp' },
    username: { type: ['string', 'null'], default: null, description: 'digest user, when the trunk challenges' },
    password: { type: ['string', 'null'], default: null, description: 'digest password (runtime trunks keep it encrypted; a config file is the operator\'s to protect)' },
    fromDomain: { type: ['string', 'null'], default: null, description: 'host part of the From URI (default: the trunk host)' },
    callerIdPrefixes: {
      type: 'array',
      items: { type: 'string', pattern: '^[0-9]{0,15}$' },
      default: [],
      description: 'caller IDs (E.164 digits) this trunk may present, by prefix; empty: any number the account owns',
    },
    destinationPrefixes: { type: 'array', items: { type: 'string', pattern: '^[0-9]{0,15}$' }, default: [], description: 'destinations it carries, by prefix; empty: all' },
    priority: { type: 'integer', minimum: 0, maximum: 1000, default: 100, description: 'failover order: the lowest first; a trunk that fails a call with 5xx/6xx or times out passes it to the next' },
    maxCallsPerSecond: { type: 'number', exclusiveMinimum: 0, maximum: 1000, default: 10, description: 'new calls a second, across every instance' },
    maxConcurrentCalls: { type: 'integer', minimum: 1, maximum: 100_000, default: 100, description: 'calls up at once, across every instance' },
    optionsIntervalSeconds: { type: 'integer', minimum: 0, maximum: 3600, default: 30, description: 'OPTIONS keep-alive (0: none); a trunk that does not answer is skipped until it does' },
  },
} as const;

export const voiceConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    sip: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host: { type: 'string', default: '127.0.0.1', description: 'address the SIP user agent listens on (media role)' },
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 0, description: "SIP port (UDP and TCP); 0 picks a free one (set a fixed one when a trunk allows calls only from known addresses)" },
        advertisedHost: { type: ['string', 'null'], default: null, description: 'host in Via/Contact and SDP when the trunk must reach another address (NAT); default: host' },
      },
    },
    media: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        portMin: { type: 'integer', minimum: 1024, maximum: 65534, default: 20000, description: 'first RTP port (even; RTCP is the next)' },
        portMax: { type: 'integer', minimum: 1025, maximum: 65535, default: 21999, description: 'last RTP port' },
        workers: { type: 'integer', minimum: 1, maximum: 16, default: 1, description: 'media worker threads, each pacing its calls on its own loop' },
        rtpTimeoutSeconds: { type: 'integer', minimum: 5, maximum: 3600, default: 60, description: 'an answered call with no RTP for this long is hung up' },
      },
    },
    trunks: { type: 'array', items: trunkSchema, default: [], description: 'SIP trunks (more can be added at runtime: /admin/voice/trunks, `ferry voice trunks`)' },
    simulator: {
      type: 'string',
      enum: ['auto', 'on', 'off'],
      default: 'auto',
      description: 'the embedded SIP trunk simulator: auto = when no trunk is configured and the database is embedded; on = always; off = never',
    },
    ringTimeoutSeconds: { type: 'integer', minimum: 5, maximum: 600, default: 30, description: "a call's ring time unless it asks for its own (timeoutSeconds)" },
    maxDurationSeconds: { type: 'integer', minimum: 10, maximum: 86_400, default: 3600, description: 'the longest a call may last (its timeLimit at most); its credit is held for this long when it is placed' },
    callsPerSecondPerAccount: { type: 'number', exclusiveMinimum: 0, maximum: 1000, default: 5, description: "calls one account starts a second, across every instance (more wait in 'queued')" },
    maxConcurrentCallsPerAccount: { type: 'integer', minimum: 1, maximum: 100_000, default: 50, description: "calls one account has up at once, across every instance (more wait in 'queued')" },
    ownerLeaseSeconds: { type: 'integer', minimum: 5, maximum: 600, default: 20, description: 'a call whose owning instance has not renewed its claim for this long is ended as failed (the instance stopped)' },
    prices: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        defaultPerMinute: { type: ['number', 'null'], minimum: 0, default: null, description: 'per minute, in the account currency, where no prefix matches; null: such calls are free' },
        entries: {
          type: 'array',
          default: [],
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['prefix', 'perMinute'],
            properties: { prefix: { type: 'string', pattern: '^[0-9]{0,15}$' }, perMinute: { type: 'number', minimum: 0 } },
          },
        },
        inboundPerMinute: { type: 'number', minimum: 0, default: 0, description: 'per minute, in the account currency, for a call to one of its numbers answered by an agent (default free)' },
        minimumSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 60, description: 'the first billing increment (an answered call is billed at least this)' },
        incrementSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 60, description: 'the billing increment after the first' },
      },
    },
    tts: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        espeakPath: { type: 'string', default: 'espeak-ng', description: 'the espeak-ng program (Debian package espeak-ng), run as a separate process' },
        cacheMegabytes: { type: 'integer', minimum: 0, maximum: 100_000, default: 256, description: 'synthesized prompts kept on disk under the data folder, least recently used evicted' },
        defaultLocale: { type: 'string', default: 'en-US', description: 'the locale of a say step that names neither locale nor voice' },
        providers: {
          type: 'array',
          default: [],
          description: "OpenAI-compatible speech endpoints (POST {baseUrl}/audio/speech) for locales espeak-ng has no voice for (Twi tw-GH, Ewe ee-GH) or that should sound natural; a provider's locale is served by it before espeak-ng",
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['id', 'baseUrl', 'model', 'voices'],
            properties: {
              id: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,31}$', description: 'its name in GET /v1/voice/voices' },
              baseUrl: { type: 'string', minLength: 1, description: 'the API root, e.g. https://tts.example.org/v1' },
              apiKey: { type: 'string', default: '', description: 'sent as a bearer token (FERRY_VOICE_TTS_… env or the config file; never logged)' },
              model: { type: 'string', minLength: 1 },
              timeoutMs: { type: 'integer', minimum: 1000, maximum: 120_000, default: 15_000 },
              voices: {
                type: 'array',
                minItems: 1,
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['locale', 'voice'],
                  properties: {
                    locale: { type: 'string', pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$' },
                    voice: { type: 'string', minLength: 1, description: "the provider's voice name" },
                    name: { type: 'string' },
                    gender: { type: 'string', enum: ['male', 'female', 'unknown'] },
                    quality: { type: 'string', enum: ['natural', 'robotic'], default: 'natural', description: 'said honestly in the catalogue' },
                  },
                },
              },
            },
          },
        },
      },
    },
    dialer: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'the browser dialer (/dialer): SIP over WebSocket on the API listener and WebRTC audio terminated on an instance running the api and media roles',
      properties: {
        enabled: { type: 'boolean', default: true },
        webrtcHost: { type: ['string', 'null'], default: null, description: "the address browsers' audio reaches (host candidates are gathered on it only); default voice.sip.advertisedHost or voice.sip.host" },
        iceServers: {
          type: 'array',
          default: [],
          description: 'STUN/TURN servers for browsers behind NAT (none by default: nothing leaves the host unasked)',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['urls'],
            properties: { urls: { type: 'string', minLength: 1 }, username: { type: 'string' }, credential: { type: 'string' } },
          },
        },
        portMin: { type: 'integer', minimum: 1024, maximum: 65534, default: 22000, description: "first UDP port of the browsers' calls (each takes two: its WebRTC leg and its trunk side)" },
        portMax: { type: 'integer', minimum: 1025, maximum: 65535, default: 22999 },
        maxTokenSeconds: { type: 'integer', minimum: 60, maximum: 43_200, default: 43_200, description: 'the longest a dialer token (POST /v1/voice/dialer/token) may live' },
      },
    },
    playback: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        maxBytes: { type: 'integer', minimum: 1024, maximum: 104_857_600, default: 10_485_760, description: 'largest audio file a call fetches to play' },
        maxSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 600, description: 'longest audio file a call plays' },
      },
    },
  },
} as const;

export interface TrunkConfig {
  name: string;
  host: string;
  port: number;
  transport: 'udp' | 'tcp';
  username: string | null;
  password: string | null;
  fromDomain: string | null;
  callerIdPrefixes: string[];
  destinationPrefixes: string[];
  priority: number;
  maxCallsPerSecond: number;
  maxConcurrentCalls: number;
  optionsIntervalSeconds: number;
}

export interface VoiceConfig {
  sip: { host: string; port: number; advertisedHost: string | null };
  media: { portMin: number; portMax: number; workers: number; rtpTimeoutSeconds: number };
  trunks: TrunkConfig[];
  simulator: 'auto' | 'on' | 'off';
  ringTimeoutSeconds: number;
  maxDurationSeconds: number;
  callsPerSecondPerAccount: number;
  maxConcurrentCallsPerAccount: number;
  ownerLeaseSeconds: number;
  prices: { defaultPerMinute: number | null; entries: Array<{ prefix: string; perMinute: number }>; inboundPerMinute: number; minimumSeconds: number; incrementSeconds: number };
  tts: {
    espeakPath: string;
    cacheMegabytes: number;
    defaultLocale: string;
    providers: Array<{
      id: string;
      baseUrl: string;
      apiKey: string;
      model: string;
      timeoutMs: number;
      voices: Array<{ locale: string; voice: string; name?: string; gender?: 'male' | 'female' | 'unknown'; quality: 'natural' | 'robotic' }>;
    }>;
  };
  playback: { maxBytes: number; maxSeconds: number };
  dialer: {
    enabled: boolean;
    webrtcHost: string | null;
    iceServers: Array<{ urls: string; username?: string; credential?: string }>;
    portMin: number;
    portMax: number;
    maxTokenSeconds: number;
  };
}

export { trunkSchema };
