import type { ShortlinkService } from '../../../src/channels/shortlink/shortlink-service.js';
import { call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';

export interface ShortlinkDaemon {
  d: TestDaemon;
  service: ShortlinkService;
  /** The redirect listener (http://127.0.0.1:port). */
  redirect: string;
  token: string;
  accountId: string;
  api(method: string, path: string, body?: unknown): ReturnType<typeof call>;
  /** Writes the clicks waiting in memory now (instead of waiting for the batch timer). */
  flush(): Promise<void>;
}

let n = 0;

/** A daemon with a customer holding both short link scopes (or the ones given). */
export async function shortlinkDaemon(extra: Record<string, string> = {}, scopes: string | string[] = ['shortlink:manage', 'shortlink:read']): Promise<ShortlinkDaemon> {
  const d = await startDaemon(extra);
  const name = `sl${process.pid}x${++n}`;
  const account = await d.adminCall('POST', '/admin/accounts', { name });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return withAccount(d, account.id as string, key.token as string);
}

export function withAccount(d: TestDaemon, accountId: string, token: string): ShortlinkDaemon {
  const service = d.daemon.modules.service<ShortlinkService>('shortlink');
  return {
    d,
    service,
    redirect: service.redirectAddress,
    token,
    accountId,
    api: (method, path, body) => call(d.api, method, path, { token, body }),
    flush: () => service.recorder.flush(),
  };
}

export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
export const IPHONE_UA = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
export const ANDROID_UA = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36';

/** One visit to the redirect listener, redirects not followed. */
export async function visit(base: string, slug: string, opts: { method?: string; ua?: string | null; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.ua !== null) headers['user-agent'] = opts.ua ?? BROWSER_UA;
  const res = await fetch(`${base}/${slug}`, { method: opts.method ?? 'GET', headers, redirect: 'manual' });
  const text = await res.text();
  return { status: res.status, location: res.headers.get('location'), cacheControl: res.headers.get('cache-control'), headers: res.headers, text };
}
