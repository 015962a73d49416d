import type { ModuleEvents } from '../../../platform/event-sink.js';
import type { Db } from '../../../store/types.js';
import type { TranscriptEntry } from './agent-conversation.js';

export interface TranscriptLine {
  seq: number;
  at: Date;
  entry: TranscriptEntry;
}

/** The event a transcript line is also sent as (webhooks), if any. */
function eventOf(entry: TranscriptEntry): 'voice.agent.turn' | 'voice.agent.tool' | 'voice.agent.transfer' | null {
  if (entry.role === 'agent' && entry.latency) return 'voice.agent.turn';
  if (entry.role === 'tool') return 'voice.agent.tool';
  if (entry.role === 'event' && entry.event === 'transfer') return 'voice.agent.transfer';
  return null;
}

/**
 * A call's transcript, line by line as the conversation goes (a crash keeps what was said up to it), with the line's
 * event in the same transaction: a turn, a tool call and its result, a transfer.
 */
export class TranscriptStore {
  constructor(private readonly o: { db: Db; events: ModuleEvents }) {}

  async append(call: { id: string; accountId: string }, seq: number, entry: TranscriptEntry): Promise<void> {
    const type = eventOf(entry);
    await this.o.db.tx(async (q) => {
      await q.query(`INSERT INTO voice_call_transcripts (call_id, seq, entry) VALUES ($1, $2, $3::jsonb)`, [call.id, seq, JSON.stringify(entry)]);
      if (type) await this.o.events.emit(q, { accountId: call.accountId, type, data: { callId: call.id, seq, ...entry }, messageKey: call.id });
    });
    if (type) this.o.events.wake();
  }

  async list(callId: string): Promise<TranscriptLine[]> {
    const { rows } = await this.o.db.query<{ seq: number; at: Date | string; entry: TranscriptEntry | string }>(
      `SELECT seq, at, entry FROM voice_call_transcripts WHERE call_id = $1 ORDER BY seq`,
      [callId],
    );
    return rows.map((r) => ({
      seq: r.seq,
      at: r.at instanceof Date ? r.at : new Date(r.at),
      entry: typeof r.entry === 'string' ? (JSON.parse(r.entry) as TranscriptEntry) : r.entry,
    }));
  }
}
