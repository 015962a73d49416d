import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** Messenger's migrations and the tables the core purges and vacuums for it. */
export const messengerStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'messenger', 'migrations'),
  tables: [
    // Sent messages once past queued (later statuses only update the row), and inbound messages.
    { name: 'messenger_messages', vacuum: 'ledger', retention: { family: 'messenger', ageColumn: 'updated_at', ageUnit: 'ms', finishedWhere: `status <> 'queued'` } },
    { name: 'messenger_inbound', retention: { family: 'messenger', ageColumn: 'received_at', ageUnit: 'ms' } },
  ],
};
