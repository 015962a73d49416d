import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** Request logs' migrations and the tables the core purges and vacuums for them (request_logs has its own retention, logs.retentionDays). */
export const logsStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'logs', 'migrations'),
  tables: [
    { name: 'request_logs', vacuum: 'ledger' },
    { name: 'log_sessions', vacuum: 'ledger', retention: { family: 'logs', ageColumn: 'expires_at', ageUnit: 'ms' } },
  ],
};
