import { randomBytes } from 'node:crypto';
import { REDIS_URL } from './env.js';

/** A key prefix private to one test, so parallel test files never share Redis keys. */
export function testKeyPrefix(): string {
  return `ferrytest:${randomBytes(5).toString('hex')}:`;
}

export { REDIS_URL };
