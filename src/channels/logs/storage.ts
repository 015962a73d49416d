import type { ChannelModule } from '../../platform/channel-module.js';
import type { PartitionedTable } from '../../store/sql/range-partitions.js';
import { assetPath } from '../../util/paths.js';

/**
 * The request logs, partitioned by their request time (migration 0053): the core creates partitions ahead, and the
 * module's purge drops a whole one once past logs.retentionDays (logs-service.ts), so the core's retention leaves it be.
 */
export const REQUEST_LOGS_TABLE: PartitionedTable = { name: 'request_logs', vacuum: 'ledger', partitions: { column: 'created_at', widthDays: 1 } };

/** Request logs' migrations and the tables the core purges and vacuums for them (request_logs has its own retention, logs.retentionDays). */
export const logsStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'logs', 'migrations'),
  tables: [REQUEST_LOGS_TABLE, { name: 'log_sessions', vacuum: 'ledger', retention: { family: 'logs', ageColumn: 'expires_at', ageUnit: 'ms' } }],
};
