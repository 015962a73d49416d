import type { ChannelModule } from '../../platform/channel-module.js';
import { LOGS_MCP_TOOLS } from './logs-mcp-tools.js';
import { logPageRoutes } from './log-page.js';
import { LogSessions } from './log-sessions.js';
import { logsRoutes } from './logs-routes.js';
import { LogsService } from './logs-service.js';
import { RequestLogStore } from './request-log-store.js';
import { RequestLogWriter } from './request-log-writer.js';

/**
 * Request logs: every /v1 request recorded (from the HTTP app's response hook, written in batches), searched under
 * /v1/logs, the key statistics at /v1/keys/stats, retention by a periodic purge, and the /logs page.
 */
export const logsModule: ChannelModule<LogsService> = {
  name: 'logs',
  maturity: 'beta',
  tag: { name: 'logs', description: 'Request logs of the account and the usage of its keys' },
  scopes: ['logs:read'],
  configKey: 'logs',
  async create(ctx) {
    const { config } = ctx;
    const store = new RequestLogStore(ctx.db);
    const logs = new LogsService({ db: ctx.db, store, accounts: ctx.accounts, config });
    const writer = new RequestLogWriter({
      store,
      log: ctx.log,
      registry: ctx.metrics.registry,
      bodyLimitBytes: config.logs.bodyLimitBytes,
      bufferSize: config.logs.bufferSize,
      flushMs: config.logs.flushMs,
    });
    const sessions = new LogSessions({ db: ctx.db, csrfKey: ctx.deriveKey('logs-page-csrf'), ttlMs: config.logs.sessionHours * 3_600_000 });
    // Retention of request logs and page sessions: one instance of a cluster at a time (the platform's scheduler).
    const purge = async () => {
      const [n] = await Promise.all([logs.purgeExpired(), sessions.purgeExpired()]);
      if (n) ctx.log.info({ rows: n, retentionDays: config.logs.retentionDays }, 'request logs past retention deleted');
    };
    return {
      service: logs,
      mcpTools: LOGS_MCP_TOOLS,
      jobs: [{ name: 'logs.purge', everyMs: config.logs.purgeIntervalSeconds * 1000, scope: 'cluster', runAtStart: true, run: purge }],
      async routes(app) {
        if (config.logs.enabled) app.ferryResponseObservers.push(writer.observe);
        await app.register(logsRoutes, { logs });
        await app.register(logPageRoutes, { logs, sessions });
      },
      async stop() {
        await writer.close();
      },
    };
  },
};
