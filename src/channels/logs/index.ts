import type { ChannelModule } from '../../platform/channel-module.js';
import { LOGS_MCP_TOOLS } from './logs-mcp-tools.js';
import { logPageRoutes } from './log-page.js';
import { LogSessions } from './log-sessions.js';
import { logsRoutes } from './logs-routes.js';
import { LogsService } from './logs-service.js';
import { RequestLogStore } from './request-log-store.js';
import { RequestLogWriter } from './request-log-writer.js';
import { logsCli } from './cli.js';
import { LOGS_HISTORIC_ADMIN_PATHS, logsAdminRoutes } from './logs-admin-routes.js';

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
    let purgeTimer: NodeJS.Timeout | undefined;
    let purging: Promise<unknown> | null = null;
    const purge = () => {
      purging = Promise.all([logs.purgeExpired(), sessions.purgeExpired()])
        .then(([n]) => n && ctx.log.info({ rows: n, retentionDays: config.logs.retentionDays }, 'request logs past retention deleted'))
        .catch((err: Error) => ctx.log.warn({ err: err.message }, 'request log retention failed; retried at the next pass'))
        .finally(() => (purging = null));
    };
    return {
      service: logs,
      mcpTools: LOGS_MCP_TOOLS,
      async adminRoutes(app) {
        await logsAdminRoutes(app, { db: ctx.db, accounts: ctx.accounts, logs });
      },
      async routes(app) {
        if (config.logs.enabled) app.ferryResponseObservers.push(writer.observe);
        await app.register(logsRoutes, { logs });
        await app.register(logPageRoutes, { logs, sessions });
      },
      async start() {
        purge();
        purgeTimer = setInterval(purge, config.logs.purgeIntervalSeconds * 1000);
        purgeTimer.unref();
      },
      async stop() {
        clearInterval(purgeTimer);
        await purging;
        await writer.close();
      },
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: logsCli,
  historicAdminPaths: LOGS_HISTORIC_ADMIN_PATHS,
};
