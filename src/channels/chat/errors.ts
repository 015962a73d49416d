import type { ModuleErrors } from '../../http/errors.js';

/**
 * In-app chat's error codes, merged into the one catalogue at boot. Another account's user or channel, and a channel
 * the end user is not a member of, answer the same 404 as one that does not exist.
 */
export const CHAT_ERRORS = {
  CHAT_TOKEN_INVALID: { status: 401, message: 'The chat token is not valid (malformed, wrong signature or signing key retired)' },
  CHAT_TOKEN_EXPIRED: { status: 401, message: 'The chat token has expired; mint a new one' },
  CHAT_TOKEN_REVOKED: { status: 401, message: "The chat token was revoked (the user's tokens were revoked or the user deleted)" },
  CHAT_USER_TOKEN_REQUIRED: { status: 401, message: 'This route answers for an end user: call it with a user token (POST /v1/chat-sdk/users/token), not an API key' },
  CHAT_USER_BANNED: { status: 403, message: 'The chat user is banned' },
  CHAT_USER_NOT_FOUND: { status: 404, message: 'No such chat user' },
  CHAT_CHANNEL_NOT_FOUND: { status: 404, message: 'No such chat channel' },
  CHAT_CHANNEL_EXISTS: { status: 409, message: 'A channel with this id exists' },
  CHAT_MESSAGE_NOT_FOUND: { status: 404, message: 'No such chat message' },
  CHAT_MEMBER_NOT_FOUND: { status: 404, message: 'The user is not a member of the channel' },
  CHAT_NOT_ALLOWED: { status: 403, message: 'The chat user may not do this (not the owner, not the sender, or muted)' },
  CHAT_TOO_MANY_MEMBERS: { status: 422, message: 'The channel would have more members than chat.maxMembersPerChannel' },
  CHAT_MESSAGE_TOO_LARGE: { status: 413, message: 'The message is larger than chat.maxMessageBytes' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof CHAT_ERRORS, true> {}
}
