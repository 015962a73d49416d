import { Registry } from 'prom-client';
import { AccountService } from '../../../src/accounts/account-service.js';
import { createLogger } from '../../../src/log.js';
import { CommandStatus } from '../../../src/smpp/constants.js';
import { CustomerMetrics } from '../../../src/smpp/customer/customer-metrics.js';
import { CustomerServer, type CustomerServerOptions } from '../../../src/messaging/smpp-ingress/customer-server.js';
import { testDb } from '../../helpers/db.js';
import { CustomerClient, type ClientBindType } from './customer-client.js';
import { MemoryIngress } from './memory-ingress.js';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TestAccount {
  accountId: string;
  systemId: string;
  password: string;
}

/** A customer server on an ephemeral port over a real AccountService (migrated test database). */
export interface CustomerFixture {
  server: CustomerServer;
  sms: MemoryIngress;
  accounts: AccountService;
  registry: Registry;
  metrics: CustomerMetrics;
  /** Every log line written, parsed. */
  logs: Array<Record<string, unknown>>;
  logText(): string;
  /** Creates an account with SMPP credentials (system_id = name). */
  account(name: string, options?: { password?: string; allowedIps?: string[] | null; maxBinds?: number }): Promise<TestAccount>;
  /** Connects and binds, failing the test setup on a refusal; closed at teardown. */
  bind(account: TestAccount, bindType?: ClientBindType, options?: { tls?: boolean; host?: string }): Promise<CustomerClient>;
  /** Connects without binding; closed at teardown. */
  connect(options?: { tls?: boolean; host?: string }): Promise<CustomerClient>;
  /** A counter or gauge value from the registry. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

export async function customerFixture(t: Teardown, options: Partial<CustomerServerOptions> = {}): Promise<CustomerFixture> {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const accounts = new AccountService(tdb.db);
  const sms = new MemoryIngress();
  const registry = new Registry();
  const metrics = new CustomerMetrics(registry);
  const lines: string[] = [];
  const log = createLogger('debug', { write: (line: string) => void lines.push(line) });
  const server = await CustomerServer.start({ host: '127.0.0.1', port: 0, accounts, sms, idleTimeoutMs: 30_000, log, metrics, ...options });
  t.teardown(() => server.close());
  const ports = (): number => server.ports.plain;
  const fixture: CustomerFixture = {
    server,
    sms,
    accounts,
    registry,
    metrics,
    get logs() {
      return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    logText: () => lines.join(''),
    async account(name, opts = {}) {
      const password = opts.password ?? 'pw' + name.slice(0, 6);
      const { account, smpp } = await accounts.create({ name, smppPassword: password });
      if (opts.allowedIps !== undefined || opts.maxBinds !== undefined) {
        await accounts.setSmppCredentials(account.id, { password, allowedIps: opts.allowedIps ?? null, maxBinds: opts.maxBinds ?? null });
      }
      return { accountId: account.id, systemId: smpp.systemId, password };
    },
    async bind(acc, bindType = 'transceiver', opts = {}) {
      const port = opts.tls ? server.ports.tls! : ports();
      const { client, resp } = await CustomerClient.bound(port, bindType, acc.systemId, acc.password, opts);
      t.teardown(() => client.close());
      if (resp.command_status !== CommandStatus.ESME_ROK) throw new Error(`bind refused: ${resp.command_status}`);
      return client;
    },
    async connect(opts = {}) {
      const client = await CustomerClient.connect(opts.tls ? server.ports.tls! : ports(), opts);
      t.teardown(() => client.close());
      return client;
    },
    async metric(name, labels = {}) {
      const m = await registry.getSingleMetric(name)?.get();
      const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
      return v?.value ?? 0;
    },
  };
  return fixture;
}

export { waitFor } from '../../helpers/wait.js';
