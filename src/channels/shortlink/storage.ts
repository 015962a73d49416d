import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** Short links' migrations and the tables the core purges and vacuums for them. */
export const shortlinkStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'shortlink', 'migrations'),
  tables: [
    // Partitioned by the click's time (migration 0054): retention drops whole partitions past retention.shortlink.
    { name: 'shortlink_clicks', partitions: { column: 'at' }, retention: { family: 'shortlink', ageColumn: 'at', ageUnit: 'timestamptz' } },
    // Updated on every click.
    { name: 'shortlink_rollups', vacuum: 'churn', retention: { family: 'shortlink', ageColumn: 'hour', ageUnit: 'timestamptz' } },
  ],
};
