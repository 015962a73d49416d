import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/**
 * Push's migrations and the tables the core vacuums for it. Sends leave by push.retentionDays (their own purge job,
 * sends-purge.ts), not by the core's retention: the core reads a family's days from its own `retention` section,
 * which a module cannot extend.
 */
export const pushStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'push', 'migrations'),
  tables: [
    // Counters updated by every batch of a send; sizes by every (un)subscription.
    { name: 'push_sends', vacuum: 'churn' },
    { name: 'push_topics', vacuum: 'churn' },
    // Upserted at each app start of every device, invalidated by the providers' answers.
    { name: 'push_devices', vacuum: 'ledger' },
  ],
};
