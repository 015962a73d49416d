import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** Email's migrations and the tables the core purges and vacuums for it. */
export const emailStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'email', 'migrations'),
  tables: [
    // Messages past queued or scheduled, with their events; then a send's content once none of its messages is left.
    {
      name: 'email_messages',
      vacuum: 'ledger',
      retention: { family: 'email', ageColumn: 'updated_at', ageUnit: 'ms', finishedWhere: `status NOT IN ('queued', 'scheduled')`, key: 'id', children: [{ table: 'email_events', column: 'message_id' }] },
    },
    { name: 'email_sends', retention: { family: 'email', ageColumn: 'created_at', ageUnit: 'ms', finishedWhere: 'NOT EXISTS (SELECT 1 FROM email_messages m WHERE m.send_id = email_sends.id)' } },
  ],
};
