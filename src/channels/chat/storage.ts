import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** Chat's migrations and the tables the core vacuums for it. History is kept (no retention): it is the product. */
export const chatStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'chat', 'migrations'),
  tables: [
    // last_seq moves with every message; read marks with every read.
    { name: 'chat_channels', vacuum: 'churn' },
    { name: 'chat_members', vacuum: 'churn' },
    // A row per message that may push, deleted within milliseconds.
    { name: 'chat_push_outbox', vacuum: 'churn' },
  ],
};
