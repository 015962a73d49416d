import type { ChannelModule } from '../../platform/channel-module.js';
import { RangePartitions } from '../../store/sql/range-partitions.js';
import { LOGS_MCP_TOOLS } from './logs-mcp-tools.js';
import { logPageRoutes } from './log-page.js';
import { LogSessions } from './log-sessions.js';
import { logsRoutes } from './logs-routes.js';
import { LogsService } from './logs-service.js';
import { RequestLogStore } from './request-log-store.js';
import { RequestLogWriter } from './request-log-writer.js';
import { logsStorage } from './storage.js';
import { logsConfigSchema, type LogsConfig } from './config.js';
import { LOGS_ERRORS } from './errors.js';
import { LOGS_SCOPES } from './scopes.js';
import type { OtpService } from '../otp/index.js';
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
  // Storage (issue 43): its migrations and its tables' retention and vacuuming.
  ...logsStorage,
  scopes: LOGS_SCOPES,
  config: { key: 'logs', schema: logsConfigSchema },
  errors: LOGS_ERRORS,
  // The OTP endpoints' limits are among the rate rules it lists with the key statistics.
  dependsOn: ['otp'],
  async create(ctx) {
    const { config } = ctx;
    const section = ctx.section<LogsConfig>();
    // Searches and key statistics tolerate replica lag (the rows are written in batches anyway).
    const store = new RequestLogStore(ctx.db, ctx.readDb);
    const logs = new LogsService({ db: ctx.db, store, partitions: new RangePartitions(ctx.db, ctx.log), accounts: ctx.accounts, config, section, otpLimits: ctx.use<OtpService>('otp').limits });
    const writer = new RequestLogWriter({
      store,
      log: ctx.log,
      registry: ctx.metrics.registry,
      bodyLimitBytes: section.bodyLimitBytes,
      bufferSize: section.bufferSize,
      flushMs: section.flushMs,
    });
    const sessions = new LogSessions({ db: ctx.db, csrfKey: ctx.deriveKey('logs-page-csrf'), ttlMs: section.sessionHours * 3_600_000 });
    // Retention of request logs and page sessions: one instance of a cluster at a time (the platform's scheduler).
    const purge = async () => {
      const [n] = await Promise.all([logs.purgeExpired(), sessions.purgeExpired()]);
      if (n) ctx.log.info({ rows: n, retentionDays: section.retentionDays }, 'request logs past retention deleted');
    };
    return {
      service: logs,
      mcpTools: LOGS_MCP_TOOLS,
      async adminRoutes(app) {
        await logsAdminRoutes(app, { db: ctx.db, accounts: ctx.accounts, logs });
      },
      jobs: [{ name: 'logs.purge', everyMs: section.purgeIntervalSeconds * 1000, scope: 'cluster', runAtStart: true, run: purge }],
      async routes(app) {
        if (section.enabled) app.ferryResponseObservers.push(writer.observe);
        await app.register(logsRoutes, { logs });
        await app.register(logPageRoutes, { logs, sessions });
      },
      async stop() {
        await writer.close();
      },
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: logsCli,
  historicAdminPaths: LOGS_HISTORIC_ADMIN_PATHS,
  // The log page and its API, and the keys' usage, predate the /v1/<name> rule (spec §7.4 URLs).
  historicApiPaths: ['/logs', '/v1/keys/stats'],
};
