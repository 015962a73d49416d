import type { ChannelModule } from '../../platform/channel-module.js';
import { assetPath } from '../../util/paths.js';

/** Voice's migrations and the tables the core keeps for it: ended calls leave with retention.voice (or retention.days). */
export const voiceStorage: Pick<ChannelModule, 'migrations' | 'tables'> = {
  migrations: assetPath('channels', 'voice', 'migrations'),
  tables: [
    {
      name: 'voice_calls',
      vacuum: 'churn',
      retention: { family: 'voice', ageColumn: 'ended_at', ageUnit: 'timestamptz', finishedWhere: 'ended_at IS NOT NULL', key: 'id', children: [{ table: 'voice_call_history', column: 'call_id' }, { table: 'voice_call_transcripts', column: 'call_id' }] },
    },
    { name: 'voice_call_history', vacuum: 'ledger' },
    { name: 'voice_call_transcripts', vacuum: 'ledger' },
  ],
};
