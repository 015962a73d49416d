import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** SMS's own migrations (its batches; the message ledger is the core's, src/store/sql/migrations/). */
export const smsStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'sms', 'migrations'),
};
