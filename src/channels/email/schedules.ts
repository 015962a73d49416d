import type { Logger } from 'pino';
import type { Db } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import type { EmailService } from './email-service.js';
import type { EmailContent } from './email-content.js';

export interface ScheduleInput {
  name: string;
  templateId: string;
  from: string;
  inactiveDays: number;
  capDays: number;
  intervalMinutes: number;
  quietHours?: { start: number; end: number } | null;
  maxPerRun: number;
  startAt?: number;
}

export interface ScheduleRun {
  id: string;
  at: string;
  audience: number;
  sent: number;
  capped: number;
  suppressed: number;
  skippedReason: string | null;
}

const DAY = 86_400_000;

/**
 * Re-engagement schedules: every interval, a template goes (stream bulk, so with one-click unsubscribe) to the
 * recipients of the account's earlier mail who got mail at least inactiveDays ago and have not opened or clicked
 * (machine opens do not count) since; at most once per capDays each, not during quiet hours (UTC), never to a suppressed
 * address (unsubscribed, bounced, complained). Each run is recorded with its counts. Runs are claimed in SQL, so one
 * instance runs a schedule at a time; the clock is injected (runDue(now)).
 */
export class EmailSchedules {
  constructor(private readonly o: { db: Db; email: EmailService; log: Logger }) {}

  async create(accountId: string, s: ScheduleInput, now: number) {
    const id = newId('sch_', now);
    await this.o.db.query(
      `INSERT INTO email_schedules (id, account_id, name, template_id, from_address, inactive_days, cap_days, interval_minutes, quiet_start_hour, quiet_end_hour, max_per_run, next_run_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [id, accountId, s.name, s.templateId, s.from.toLowerCase(), s.inactiveDays, s.capDays, s.intervalMinutes, s.quietHours?.start ?? null, s.quietHours?.end ?? null, s.maxPerRun, s.startAt ?? now, now],
    );
    return (await this.get(accountId, id))!;
  }

  async get(accountId: string, id: string) {
    const { rows } = await this.o.db.query<Record<string, any>>(`SELECT * FROM email_schedules WHERE account_id = $1 AND id = $2`, [accountId, id]);
    if (!rows.length) return null;
    const runs = await this.o.db.query<Record<string, any>>(`SELECT * FROM email_schedule_runs WHERE schedule_id = $1 ORDER BY at DESC, id DESC LIMIT 100`, [id]);
    return { ...view(rows[0]), runs: runs.rows.map(runView) };
  }

  async list(accountId: string) {
    const { rows } = await this.o.db.query<Record<string, any>>(`SELECT * FROM email_schedules WHERE account_id = $1 ORDER BY created_at, id`, [accountId]);
    return rows.map(view);
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    const r = await this.o.db.query(`DELETE FROM email_schedules WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return r.rowCount > 0;
  }

  /** Runs every schedule due at `now` (claimed first, so instances do not run one twice); returns the runs made. */
  async runDue(now: number): Promise<ScheduleRun[]> {
    const claimed = await this.o.db.query<Record<string, any>>(
      `UPDATE email_schedules SET claimed_until = $1 + 600000
       WHERE id IN (SELECT id FROM email_schedules WHERE next_run_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1) ORDER BY next_run_at LIMIT 10)
       RETURNING *`,
      [now],
    );
    const out: ScheduleRun[] = [];
    for (const s of claimed.rows) {
      try {
        out.push(await this.runOne(s, now));
      } catch (err) {
        this.o.log.warn({ schedule: s.id, err: (err as Error).message }, 'email schedule run failed');
        await this.record(s, now, { audience: 0, sent: 0, capped: 0, suppressed: 0, skippedReason: `error: ${(err as Error).message.slice(0, 200)}` });
      }
    }
    return out;
  }

  private async runOne(s: Record<string, any>, now: number): Promise<ScheduleRun> {
    const hour = new Date(now).getUTCHours();
    const qs = s.quiet_start_hour as number | null;
    const qe = s.quiet_end_hour as number | null;
    if (qs !== null && qe !== null && (qs <= qe ? hour >= qs && hour < qe : hour >= qs || hour < qe)) {
      return this.record(s, now, { audience: 0, sent: 0, capped: 0, suppressed: 0, skippedReason: 'quiet_hours' });
    }
    const since = now - Number(s.inactive_days) * DAY;
    const capSince = now - Number(s.cap_days) * DAY;
    const { rows } = await this.o.db.query<{ recipient: string; capped: boolean; suppressed: boolean }>(
      `SELECT m.recipient,
              EXISTS (SELECT 1 FROM email_messages c WHERE c.schedule_id = $4 AND c.recipient = m.recipient AND c.created_at > $3) AS capped,
              EXISTS (SELECT 1 FROM email_suppressions x WHERE x.account_id = $1 AND x.address = m.recipient AND x.stream = 'bulk') AS suppressed
       FROM email_messages m
       WHERE m.account_id = $1 AND m.schedule_id IS NULL AND m.status <> 'dropped'
       GROUP BY m.recipient
       HAVING min(m.created_at) <= $2
          AND NOT EXISTS (SELECT 1 FROM email_events e JOIN email_messages em ON em.id = e.message_id
                          WHERE em.account_id = $1 AND em.recipient = m.recipient AND e.kind IN ('opened', 'clicked') AND e.at > $2
                            AND coalesce(e.detail->>'machine', 'false') <> 'true')
       ORDER BY m.recipient
       LIMIT $5`,
      [s.account_id, since, capSince, s.id, Number(s.max_per_run) * 4],
    );
    const capped = rows.filter((r) => r.capped).length;
    const suppressed = rows.filter((r) => !r.capped && r.suppressed).length;
    const targets = rows.filter((r) => !r.capped && !r.suppressed).slice(0, Number(s.max_per_run)).map((r) => r.recipient);
    let sent = 0;
    if (targets.length) {
      const sender = await this.o.email.senderDomain(s.account_id, s.from_address);
      const sends: Array<{ content: EmailContent; recipients: string[] }> = [];
      for (const rcpt of targets) {
        const r = await this.o.email.compose(s.account_id, { templateId: s.template_id, data: { email: rcpt } });
        sends.push({ content: { from: s.from_address, to: [rcpt], cc: [], subject: r.subject, html: r.html, text: r.text, headers: {}, attachments: [] }, recipients: [rcpt] });
      }
      const res = await this.o.email.store(s.account_id, sender, sends, { stream: 'bulk', tags: ['re-engagement'], metadata: { scheduleId: s.id }, tracking: { opens: true, clicks: true }, scheduleId: s.id, now });
      sent = res.reduce((n, x) => n + x.recipients.filter((r) => r.status === 'queued').length, 0);
    }
    return this.record(s, now, { audience: rows.length, sent, capped, suppressed, skippedReason: null });
  }

  private async record(s: Record<string, any>, now: number, c: Omit<ScheduleRun, 'id' | 'at'>): Promise<ScheduleRun> {
    const id = newId('run_', now);
    await this.o.db.tx(async (q) => {
      await q.query(`INSERT INTO email_schedule_runs (id, schedule_id, at, audience, sent, capped, suppressed, skipped_reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
        id, s.id, now, c.audience, c.sent, c.capped, c.suppressed, c.skippedReason,
      ]);
      await q.query(`UPDATE email_schedules SET next_run_at = $2, claimed_until = NULL WHERE id = $1`, [s.id, now + Number(s.interval_minutes) * 60_000]);
    });
    return { id, at: new Date(now).toISOString(), ...c };
  }
}

function view(r: Record<string, any>) {
  return {
    id: r.id as string,
    name: r.name as string,
    templateId: r.template_id as string,
    from: r.from_address as string,
    inactiveDays: Number(r.inactive_days),
    capDays: Number(r.cap_days),
    intervalMinutes: Number(r.interval_minutes),
    quietHours: r.quiet_start_hour === null ? null : { start: Number(r.quiet_start_hour), end: Number(r.quiet_end_hour) },
    maxPerRun: Number(r.max_per_run),
    nextRunAt: new Date(Number(r.next_run_at)).toISOString(),
  };
}

function runView(r: Record<string, any>): ScheduleRun {
  return { id: r.id, at: new Date(Number(r.at)).toISOString(), audience: r.audience, sent: r.sent, capped: r.capped, suppressed: r.suppressed, skippedReason: r.skipped_reason };
}

