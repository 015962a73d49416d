import { pino, type Logger, type DestinationStream } from 'pino';

/**
 * Paths pino censors wherever they appear in a log object. Secrets, tokens, OTP codes and
 * message bodies never reach a log line.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'password',
  'secret',
  'token',
  'pin',
  'otp',
  'message',
  'text',
  'shortMessage',
  '*.password',
  '*.secret',
  '*.token',
  '*.pin',
  '*.otp',
  '*.text',
  '*.shortMessage',
  '*.secretKey',
  '*.adminToken',
  'config.admin.token',
  'config.security.secretKey',
  'config.database.url',
  'config.database.readUrl',
  'config.redis.url',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'ferry' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

export type { Logger };
