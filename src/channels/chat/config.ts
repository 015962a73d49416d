/** The `chat` section of the config, declared by the module (index.ts) and merged into the one schema at boot. */
export const chatConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    tokenTtlSeconds: { type: 'integer', minimum: 60, maximum: 31_536_000, default: 86_400, description: 'lifetime of a user token when POST /users/token names none' },
    maxTokenTtlSeconds: { type: 'integer', minimum: 60, maximum: 31_536_000, default: 2_592_000, description: 'the longest expiresInSeconds a token may be minted with' },
    secretGraceSeconds: {
      type: 'integer',
      minimum: 0,
      maximum: 2_592_000,
      default: 86_400,
      description: 'after POST /secret/rotate, tokens signed with the previous key stay valid this long (unless the call names its own grace)',
    },
    maxMessageBytes: { type: 'integer', minimum: 256, maximum: 65_536, default: 8192, description: 'the largest message (text, attachments and data as JSON), in bytes' },
    maxMembersPerChannel: { type: 'integer', minimum: 2, maximum: 100_000, default: 1000, description: 'members one channel may have' },
    maxChannelsPerSocket: { type: 'integer', minimum: 1, maximum: 10_000, default: 500, description: "channels a socket joins at connect (the user's newest first); more are read over REST" },
    messagesPerSecond: { type: 'integer', minimum: 1, maximum: 1000, default: 10, description: 'messages (and typing events) one end user may send per second over sockets and REST, burst twice that' },
    presenceTtlSeconds: { type: 'integer', minimum: 5, maximum: 600, default: 30, description: 'a user counts as online this long after the last heartbeat of one of their sockets (an instance that dies takes its users offline within it)' },
    pushCollapseSeconds: { type: 'integer', minimum: 0, maximum: 3600, default: 5, description: 'at most one push per offline member per channel within this window (0: one per message)' },
  },
} as const;

export interface ChatConfig {
  tokenTtlSeconds: number;
  maxTokenTtlSeconds: number;
  secretGraceSeconds: number;
  maxMessageBytes: number;
  maxMembersPerChannel: number;
  maxChannelsPerSocket: number;
  messagesPerSecond: number;
  presenceTtlSeconds: number;
  pushCollapseSeconds: number;
}
