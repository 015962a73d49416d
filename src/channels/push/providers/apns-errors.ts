import { ErrorTable } from '../../../outbound/index.js';
import { DEVICE_TOKEN_INVALID, DEVICE_UNREGISTERED, PUSH_CREDENTIALS_REJECTED } from './types.js';

/** The provider's name (outbound_jobs.provider, the metrics' `provider` label). */
export const APNS_PROVIDER = 'apns';

/** The reason after which the client signs a new provider token and tries the send once more. */
export const EXPIRED_PROVIDER_TOKEN = 'ExpiredProviderToken';

/** Ferry's code for a notification APNs refuses as malformed (nothing a retry changes). */
export const PUSH_REJECTED = 'PUSH_REJECTED';

/**
 * THE APNs error table: the `reason` of Apple's JSON error body (whatever its HTTP status) → Ferry's code and what to
 * do. Reasons Apple adds later fall back by status (429 backs off, 5xx retries, other 4xx fail as PROVIDER_REJECTED).
 */
export const APNS_ERRORS = new ErrorTable(APNS_PROVIDER, {
  // 410: the token is no longer active for the topic (app uninstalled, notifications off) or has expired.
  Unregistered: { ferryCode: DEVICE_UNREGISTERED, action: 'fail', message: 'the device token is no longer active for the app' },
  ExpiredToken: { ferryCode: DEVICE_UNREGISTERED, action: 'fail', message: 'the device token has expired' },
  // 400: the token is not a token of this APNs environment. The caller picks the environment per device: a sandbox
  // (development build) token sent to production, or a production token sent to sandbox, also answers BadDeviceToken.
  BadDeviceToken: { ferryCode: DEVICE_TOKEN_INVALID, action: 'fail', message: 'the device token is not valid for this APNs environment' },
  DeviceTokenNotForTopic: { ferryCode: DEVICE_TOKEN_INVALID, action: 'fail', message: 'the device token does not belong to the app (topic)' },
  MissingDeviceToken: { ferryCode: DEVICE_TOKEN_INVALID, action: 'fail', message: 'the device token is empty' },
  // 413: the JSON body is over 4,096 bytes.
  PayloadTooLarge: { ferryCode: 'PAYLOAD_TOO_LARGE', action: 'fail', message: 'the notification is over the 4,096-byte APNs limit' },
  // 429: too many notifications to this one device: only this message waits, the app's other devices go on.
  TooManyRequests: { ferryCode: 'PROVIDER_THROTTLED', action: 'later', message: 'APNs limits the notifications to this device' },
  // 429: the provider token was renewed more often than every 20 minutes; the client's current token will do later.
  TooManyProviderTokenUpdates: { ferryCode: 'PROVIDER_THROTTLED', action: 'retry', message: 'APNs refuses provider tokens renewed more often than every 20 minutes' },
  // 403: the key is unknown, revoked or not for this team / environment: the app's credentials must change.
  InvalidProviderToken: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'APNs refused the auth key (revoked, or key id / team id wrong)' },
  MissingProviderToken: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'APNs received no provider token' },
  BadCertificate: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail' },
  BadCertificateEnvironment: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail' },
  Forbidden: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'APNs refused the credentials for this action' },
  UnrelatedKeyIdInToken: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'the auth key is not related to the app' },
  BadEnvironmentKeyInToken: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'the auth key is not allowed in this APNs environment' },
  // 403: the token is over an hour old. The client refreshes and retries once itself; this is what is left after that.
  ExpiredProviderToken: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry', message: 'APNs found the provider token expired' },
  // 400 and friends: the request itself is wrong; the same request would be refused again.
  BadCollapseId: { ferryCode: PUSH_REJECTED, action: 'fail', message: 'the collapse key is over 64 bytes' },
  BadExpirationDate: { ferryCode: PUSH_REJECTED, action: 'fail' },
  BadMessageId: { ferryCode: PUSH_REJECTED, action: 'fail' },
  BadPriority: { ferryCode: PUSH_REJECTED, action: 'fail' },
  BadTopic: { ferryCode: PUSH_REJECTED, action: 'fail' },
  DuplicateHeaders: { ferryCode: PUSH_REJECTED, action: 'fail' },
  InvalidPushType: { ferryCode: PUSH_REJECTED, action: 'fail' },
  MissingTopic: { ferryCode: PUSH_REJECTED, action: 'fail' },
  PayloadEmpty: { ferryCode: PUSH_REJECTED, action: 'fail' },
  TopicDisallowed: { ferryCode: PUSH_REJECTED, action: 'fail', message: 'the auth key may not push to this topic (bundle id)' },
  BadPath: { ferryCode: PUSH_REJECTED, action: 'fail' },
  MethodNotAllowed: { ferryCode: PUSH_REJECTED, action: 'fail' },
  // 400 IdleTimeout: the connection sat idle too long; a new one does.
  IdleTimeout: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  // 500 / 503: trouble at Apple.
  InternalServerError: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  ServiceUnavailable: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  Shutdown: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
});
