import { randomBytes } from 'node:crypto';
import { BRANCH_MAGIC } from './via.js';

/** An RFC 3261 branch: the magic cookie and 64 random bits. */
export function newBranch(): string {
  return BRANCH_MAGIC + randomBytes(8).toString('hex');
}

/** A tag or Call-ID part: 64 random bits, hex. */
export function randomToken(bytes = 8): string {
  return randomBytes(bytes).toString('hex');
}
