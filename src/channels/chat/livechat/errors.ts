import type { ModuleErrors } from '../../../http/errors.js';

/**
 * The live chat widget's and inbox page's error codes, merged into chat's catalogue (index.ts). A widget key, an
 * inbox or a conversation of another account answers the same 404 as one that does not exist.
 */
export const LIVECHAT_ERRORS = {
  CHAT_INBOX_NOT_FOUND: { status: 404, message: 'No such live chat inbox' },
  CHAT_WIDGET_KEY_UNKNOWN: { status: 404, message: 'No live chat inbox has this widget key' },
  CHAT_IDENTITY_REQUIRED: { status: 401, message: "This inbox takes identified visitors only: give identity.userId and its HMAC from the customer's server" },
  CHAT_IDENTITY_INVALID: { status: 401, message: "identity.hmac is not HMAC-SHA256(the inbox's identity secret, identity.userId) in hex" },
  CHAT_INBOX_OFFLINE: { status: 409, message: 'The inbox is outside its business hours and takes no messages now' },
  CHAT_PRECHAT_REQUIRED: { status: 422, message: 'The pre-chat form asks for fields the visitor has not given (data.fields)' },
  CHAT_CONVERSATION_NOT_FOUND: { status: 404, message: 'No such live chat conversation' },
  CHAT_AGENT_NOT_FOUND: { status: 404, message: 'No agent with this id has signed in to the inbox of this account' },
  CHAT_INBOX_SESSION_REQUIRED: { status: 401, message: 'Sign in to the inbox page with an API key holding chat:manage' },
  CHAT_CSRF_TOKEN_INVALID: { status: 403, message: 'The X-CSRF-Token header is missing or does not belong to this inbox session' },
} as const satisfies ModuleErrors;

// Its codes type-check where they are thrown (an augmentation, so the core imports nothing of the product).
declare module '../../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof LIVECHAT_ERRORS, true> {}
}
