import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** USSD's migrations and the tables the core purges and vacuums for it. */
export const ussdStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'ussd', 'migrations'),
  tables: [
    // Updated on every hop; ended sessions are purged (their transcript is in the row).
    { name: 'ussd_sessions', vacuum: 'churn', retention: { family: 'ussd', ageColumn: 'updated_at', ageUnit: 'ms', finishedWhere: `status <> 'active'` } },
  ],
};
