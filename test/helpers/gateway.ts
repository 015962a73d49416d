import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { AccountService } from '../../src/accounts/account-service.js';
import type { RouteRuleConfig, UpstreamConfig } from '../../src/config/schema.js';
import type { MessageStatus } from '../../src/ledger/types.js';
import { CustomerClient, type ClientBindType } from '../smpp/customer/customer-client.js';
import { startDaemon, type TestDaemon, gatewayOf } from './daemon.js';

export interface GatewayDaemon extends TestDaemon {
  smppPort: number;
  /** An account with SMPP credentials (system_id = name). */
  account(name: string, password?: string, patch?: Parameters<AccountService['update']>[1]): Promise<{ id: string; systemId: string; password: string }>;
  bind(bindType: ClientBindType, systemId: string, password: string): Promise<CustomerClient>;
  /** Resolves once the message reaches one of the statuses (polls the ledger), with its record. */
  waitStatus(messageId: string, statuses: MessageStatus[], timeoutMs?: number): Promise<MessageStatus>;
}

/**
 * A whole daemon on ephemeral ports. With `upstreams`, they (and `rules`) come from a config file and the embedded
 * simulator is off; without, the daemon routes to its embedded simulator (id `embedded`), by `rules` when given.
 */
export async function startGatewayDaemon(
  opts: {
    upstreams?: Array<Partial<UpstreamConfig> & Pick<UpstreamConfig, 'id' | 'port'>>;
    rules?: RouteRuleConfig[];
    env?: Record<string, string>;
    receiptDelayMs?: number;
    /** Restart on the storage of a daemon stopped with stopKeepingStore(). */
    reuse?: TestDaemon['reuse'];
  } = {},
): Promise<GatewayDaemon> {
  const env: Record<string, string> = { ...(opts.env ?? {}) };
  if (opts.receiptDelayMs !== undefined) env.FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS = String(opts.receiptDelayMs);
  if (opts.upstreams) {
    const file = join(tmpdir(), `ferry-gw-${process.pid}-${Math.random().toString(36).slice(2)}.yaml`);
    const upstreams = opts.upstreams.map((u) => ({
      host: '127.0.0.1',
      systemId: 'ferry',
      password: 'pw',
      binds: 1,
      window: 50,
      responseTimeoutMs: 2000,
      reconnect: { initialMs: 100, maxMs: 500 },
      ...u,
    }));
    writeFileSync(file, stringify({ smpp: { upstreams }, routing: { rules: opts.rules ?? [] } }));
    env.FERRY_CONFIG = file;
    env.FERRY_SMPP_SIMULATOR_ENABLED ??= 'off';
  } else if (opts.rules) {
    const file = join(tmpdir(), `ferry-gw-${process.pid}-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, stringify({ routing: { rules: opts.rules } }));
    env.FERRY_CONFIG = file;
    env.FERRY_SMPP_SIMULATOR_ENABLED ??= 'on'; // rules name the simulator only when it runs by name
  }
  const d = await startDaemon(env, opts.reuse);
  const smppPort = Number(d.daemon.addresses.smpp.split(':').pop());
  const clients: CustomerClient[] = [];
  return {
    ...d,
    smppPort,
    async account(name, password = 'secret1', patch) {
      const { account, smpp } = await d.daemon.accounts.create({ name, smppPassword: password });
      if (patch) await d.daemon.accounts.update(account.id, patch);
      return { id: account.id, systemId: smpp.systemId, password };
    },
    async bind(bindType, systemId, password) {
      const { client, resp } = await CustomerClient.bound(smppPort, bindType, systemId, password);
      if (resp.command_status !== 0) throw new Error(`bind refused: ${resp.command_status}`);
      clients.push(client);
      return client;
    },
    async waitStatus(messageId, statuses, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const rec = await gatewayOf(d.daemon).ledger.get(messageId);
        if (rec && statuses.includes(rec.status)) return rec.status;
        if (Date.now() > until) throw new Error(`${messageId} is ${rec?.status ?? 'missing'}, not ${statuses.join('|')}, after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await d.stop();
    },
    async stopKeepingStore() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await d.stopKeepingStore();
    },
  };
}
