/** A short link as stored and as the API shows it (the password only as a flag). */
export interface Utm {
  source?: string;
  medium?: string;
  campaign?: string;
  term?: string;
  content?: string;
}

export interface Link {
  id: string;
  accountId: string;
  slug: string;
  url: string;
  title: string | null;
  tags: string[];
  externalId: string | null;
  utm: Utm;
  /** scrypt hash (salt$hash, base64url); never leaves the service. */
  passwordHash: string | null;
  expiresAt: Date | null;
  expiredUrl: string | null;
  maxClicks: number | null;
  usedClicks: number;
  ios: string | null;
  android: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** True when a browser must come back to Ferry for every visit (password, expiry or a click limit). */
export function isGuarded(l: Link): boolean {
  return l.passwordHash !== null || l.expiresAt !== null || l.maxClicks !== null;
}

const UTM_KEYS = ['source', 'medium', 'campaign', 'term', 'content'] as const;

/** The destination with the link's UTM fields added as utm_* parameters, never replacing ones already in the URL. */
export function withUtm(url: string, utm: Utm): string {
  const present = UTM_KEYS.filter((k) => utm[k]);
  if (!present.length) return url;
  const u = new URL(url);
  for (const k of present) if (!u.searchParams.has(`utm_${k}`)) u.searchParams.append(`utm_${k}`, utm[k]!);
  return u.toString();
}
