import { randomFrom } from '../../util/ids.js';

/** Generated slugs: no 0/O, 1/l/I, so a slug read aloud or off paper is typed right. */
export const SLUG_ALPHABET = '23456789abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ';
export const GENERATED_SLUG_LENGTH = 7;
export const CHOSEN_SLUG_RULE = '1–64 characters: letters, digits, - and _, starting with a letter or digit';
const CHOSEN_SLUG = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Words the redirect listener or a future page may need, and ones that would mislead a reader. */
export const RESERVED_SLUGS = new Set([
  'admin', 'api', 'v1', 'v2', 'app', 'assets', 'static', 'public', 'login', 'logout', 'signin', 'signup', 'auth', 'oauth',
  'health', 'healthz', 'readyz', 'livez', 'metrics', 'status', 'docs', 'openapi', 'robots.txt', 'favicon.ico', 'well-known',
  'password', 'qr', 'links', 'link', 'shortlink', 'analytics', 'ferry', 'www', 'help', 'support', 'security', 'account',
]);

export function generateSlug(length = GENERATED_SLUG_LENGTH): string {
  return randomFrom(SLUG_ALPHABET, length);
}

/** Null when the chosen slug is fine, else why not. */
export function chosenSlugProblem(slug: string): string | null {
  if (!CHOSEN_SLUG.test(slug)) return `must be ${CHOSEN_SLUG_RULE}`;
  if (RESERVED_SLUGS.has(slug.toLowerCase())) return 'is a reserved word';
  return null;
}
