import { Gauge } from 'prom-client';
import type { Metrics } from '../../metrics.js';
import type { Db } from '../../store/types.js';

/**
 * Apps whose credentials a service refused (push_apps.paused_*, set by whichever instance got the refusal): their
 * sends wait until the credentials change. Each instance shows them as the gauge `ferry_push_apps_paused{service}` and
 * as one /readyz warning naming them, refreshed by a job.
 */
export class PausedApps {
  private readonly gauge: Gauge<'service'>;
  private warning: string | null = null;

  constructor(private readonly o: { db: Db; metrics: Metrics; warn(message: string): void; unwarn(message: string): void }) {
    this.gauge = new Gauge({
      name: 'ferry_push_apps_paused',
      help: 'Push apps whose sends wait because FCM or APNs refused their credentials (until the credentials change)',
      labelNames: ['service'],
      registers: [o.metrics.registry],
    });
  }

  async refresh(): Promise<void> {
    const { rows } = await this.o.db.query<{ id: string; paused_service: string }>(
      `SELECT id, paused_service FROM push_apps WHERE paused_service IS NOT NULL ORDER BY paused_at LIMIT 1000`,
    );
    const counts = { fcm: 0, apns: 0 };
    for (const r of rows) if (r.paused_service === 'fcm' || r.paused_service === 'apns') counts[r.paused_service]++;
    this.gauge.set({ service: 'fcm' }, counts.fcm);
    this.gauge.set({ service: 'apns' }, counts.apns);
    const warning = rows.length
      ? `push: ${rows.length} app(s) paused, their credentials refused by the service (fix with PATCH /v1/push/apps/:id): ${rows
          .slice(0, 5)
          .map((r) => `${r.id} (${r.paused_service})`)
          .join(', ')}${rows.length > 5 ? ', …' : ''}`
      : null;
    if (warning === this.warning) return;
    if (this.warning) this.o.unwarn(this.warning);
    if (warning) this.o.warn(warning);
    this.warning = warning;
  }
}
