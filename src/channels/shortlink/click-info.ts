import { createRequire } from 'node:module';
import { isbot } from 'isbot';
import UAParser from 'ua-parser-js';
import { ClientAddresses } from '../../http/client-address.js';

/** What a click records about its client (nothing that identifies a person: no address, no full user agent). */
export interface ClickClient {
  country: string | null;
  /** desktop, mobile, tablet, other */
  device: string;
  browser: string | null;
  os: string | null;
  /** The referring page's host. */
  referrer: string | null;
  bot: boolean;
  platform: 'ios' | 'android' | null;
}

type GeoLookup = (ip: string) => { country: string } | null;
let geo: GeoLookup | null = null;

/** The GeoIP database (about 18 MB): loaded when the module starts, not at import. */
export function loadGeo(): void {
  if (!geo) geo = (createRequire(import.meta.url)('geoip-country') as { lookup: GeoLookup }).lookup;
}

/** Click addresses: the core's reading of X-Forwarded-For (src/http/client-address.ts) with shortlink.trustedProxies. */
export class ClientAddress extends ClientAddresses {
  constructor(list: string) {
    super(list.split(','), 'shortlink.trustedProxies');
  }
}

const PREVIEW = /preview|unfurl|embed|whatsapp|telegrambot|skypeuripreview|discordbot|slack|facebookexternalhit|linkedinbot|twitterbot|bitlybot/i;

function refererHost(referer: string | undefined): string | null {
  if (!referer) return null;
  try {
    return new URL(referer).hostname || null;
  } catch {
    return null;
  }
}

interface AgentInfo {
  device: string;
  browser: string | null;
  os: string | null;
  bot: boolean;
  platform: 'ios' | 'android' | null;
}

// Parsing a user agent costs about 20 µs, more than the rest of a redirect; traffic repeats a few thousand agents.
const agents = new Map<string, AgentInfo>();
const MAX_AGENTS = 5000;

/** Device, browser, OS, platform and bot-ness of a user agent (memoised). */
export function describeAgent(userAgent: string | undefined): AgentInfo {
  const ua = userAgent ?? '';
  let info = agents.get(ua);
  if (info) return info;
  const r = new UAParser(ua).getResult();
  const type = r.device.type;
  const os = r.os.name ?? null;
  info = {
    device: type === 'mobile' || type === 'tablet' ? type : type ? 'other' : 'desktop',
    browser: r.browser.name ?? null,
    os,
    // No user agent at all is a script; link previews announce themselves.
    bot: ua === '' || isbot(ua) || PREVIEW.test(ua),
    platform: os === 'iOS' ? 'ios' : os === 'Android' ? 'android' : null,
  };
  if (agents.size >= MAX_AGENTS) agents.clear();
  agents.set(ua, info);
  return info;
}

/** Country, device, browser, OS, referrer host and bot-ness of a request. */
export function describeClient(ip: string | null, userAgent: string | undefined, referer: string | undefined): ClickClient {
  const country = ip && geo ? (geo(ip.startsWith('::ffff:') ? ip.slice(7) : ip)?.country ?? null) : null;
  return { country, ...describeAgent(userAgent), referrer: refererHost(referer) };
}
