import type { MessengerModuleService } from '../../../src/channels/messenger/index.js';
import { call, type TestDaemon } from '../../helpers/daemon.js';

/** An account with a key of every scope. */
export async function customer(d: TestDaemon, name: string, scopes: string | string[] = 'all') {
  const account = await d.adminCall('POST', '/admin/accounts', { name });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return { accountId: account.id as string, token: key.token as string };
}

export function messengerOf(d: TestDaemon): MessengerModuleService {
  return d.daemon.modules.service<MessengerModuleService>('messenger');
}

let seq = 0;
/** A fresh E.164 number per use (digits only). */
export function newNumber(): string {
  return `4477${String(process.pid % 10000).padStart(4, '0')}${String(++seq).padStart(4, '0')}`;
}

export function api(d: TestDaemon, token: string) {
  return {
    send: (body: Record<string, unknown>, headers: Record<string, string> = {}) => call(d.api, 'POST', '/v1/messenger/send', { token, body, headers }),
    status: (id: string) => call(d.api, 'GET', `/v1/messenger/status/${encodeURIComponent(id)}`, { token }),
    call: (method: string, path: string, body?: unknown) => call(d.api, method, path, { token, body }),
  };
}

/** Polls GET /status until `done` holds (bounded). */
export async function statusUntil(d: TestDaemon, token: string, id: string, done: (data: any) => boolean, limitMs = 10_000): Promise<any> {
  const until = Date.now() + limitMs;
  for (;;) {
    const r = await api(d, token).status(id);
    if (r.status === 200 && done(r.json.data)) return r.json.data;
    if (Date.now() > until) throw new Error(`status of ${id} not reached: ${r.text}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}
