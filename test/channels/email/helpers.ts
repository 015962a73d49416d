import type { EmailModuleService } from '../../../src/channels/email/index.js';
import { call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';

export interface EmailFixture {
  d: TestDaemon;
  svc: EmailModuleService;
  token: string;
  accountId: string;
  /** The DNS a test publishes records in (the domains' resolver and the DKIM verifier read it). */
  dns: Map<string, string[]>;
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): ReturnType<typeof call>;
  /** Polls a message until its status is one of `statuses`. */
  waitStatus(id: string, statuses: string[], limitMs?: number): Promise<any>;
}

/** A daemon with the embedded mail simulator, an account with a key and a sending domain `example.test`. */
export async function emailDaemon(extra: Record<string, string> = {}, reuse?: TestDaemon['reuse']): Promise<EmailFixture> {
  const d = await startDaemon({ FERRY_EMAIL_SIMULATOR_REPORT_DELAY_MS: '10', ...extra }, reuse);
  const svc = d.daemon.modules.service<EmailModuleService>('email');
  const dns = new Map<string, string[]>();
  svc.setResolver({
    resolveTxt: async (name) => {
      const v = dns.get(name.toLowerCase());
      if (!v) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return v.map((s) => [s]);
    },
  });
  let accountId = '';
  let token = '';
  if (!reuse) {
    const account = await d.adminCall('POST', '/admin/accounts', { name: 'mailer' });
    const key = await d.adminCall('POST', '/admin/keys', { account: 'mailer', scopes: 'all' });
    accountId = account.id;
    token = key.token;
  }
  const f: EmailFixture = {
    d,
    svc,
    token,
    accountId,
    dns,
    api: (method, path, body, headers) => call(d.api, method, path, { token: f.token, body, headers }),
    async waitStatus(id, statuses, limitMs = 15_000) {
      const until = Date.now() + limitMs;
      for (;;) {
        const r = await f.api('GET', `/v1/email/messages/${id}`);
        if (r.status === 200 && statuses.includes(r.json.data.status)) return r.json.data;
        if (Date.now() > until) throw new Error(`message ${id}: status ${r.json?.data?.status}, expected ${statuses.join('|')}: ${r.text}`);
        await new Promise((res) => setTimeout(res, 25));
      }
    },
  };
  return f;
}
