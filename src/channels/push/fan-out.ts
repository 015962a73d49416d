import type { Logger } from 'pino';
import type { EnqueuedJob, OutboundPipeline } from '../../outbound/index.js';
import type { ModuleEvents } from '../../platform/event-sink.js';
import type { Db } from '../../store/types.js';
import { type AppServices, batchJobs, type DeviceRow, type SendMessage } from './batch-job.js';
import { deadlineOf } from './push-sends.js';
import { completeSend, completionEvent } from './send-recorder.js';
import { appServicesOf } from './send-store.js';

/**
 * Expands topic sends into batch jobs, a page of devices at a time. Each page is one transaction that holds the send's
 * row (FOR UPDATE SKIP LOCKED: instances share the sends, one page of a send at a time), reads the next devices after
 * the send's cursor, enqueues their batches and moves the cursor: a crash rolls the page back whole, so no device is
 * lost or expanded twice, and memory stays one page whatever the topic's size.
 */
export class FanOut {
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;

  constructor(
    private readonly o: {
      db: Db;
      pipeline: () => OutboundPipeline;
      events: ModuleEvents;
      log: Logger;
      /** Devices read per page (and transaction). */
      pageSize: number;
      /** Devices per batch job. */
      batchSize: number;
      /** Apps without APNs credentials still reach iOS tokens through APNs (the embedded simulators). */
      simulatedApns: boolean;
      /** How often an idle fan-out looks for sends another instance accepted. */
      pollMs: number;
      deadlineMs: number;
    },
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    this.loop = null;
  }

  /** A send was accepted here: expand it now rather than at the next poll. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let expanded = 0;
      try {
        expanded = await this.page();
      } catch (err) {
        this.o.log.error({ err: (err as Error).message }, 'push fan-out: a page failed; it is tried again');
        await this.sleep(this.o.pollMs * 10);
        continue;
      }
      if (expanded < 0) await this.sleep(this.o.pollMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wakeUp = null;
        this.woken = false;
        resolve();
      };
      const t = setTimeout(done, ms);
      t.unref();
      this.wakeUp = done;
    });
  }

  /** One page of one send: the number of devices it expanded, or -1 when no send was waiting. */
  async page(): Promise<number> {
    const now = Date.now();
    let enqueued: EnqueuedJob[] = [];
    let emitted = false;
    const n = await this.o.db.tx(async (q) => {
      const { rows } = await q.query<{ id: string; account_id: string; target_kind: string; target: string; message: SendMessage | string; cursor: string | null; created_at: Date | string }>(
        `SELECT id, account_id, target_kind, target, message, cursor, created_at FROM push_sends
         WHERE status = 'expanding' AND next_expand_at <= now() ORDER BY next_expand_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
      );
      const s = rows[0];
      if (!s) return -1;
      const { rows: devices } = await q.query<DeviceRow>(
        `SELECT d.id, d.app_id, d.token, d.platform, d.environment FROM push_topic_subscriptions t JOIN push_devices d ON d.id = t.device_id
         WHERE t.account_id = $1 AND t.topic = $2 AND t.device_id > $3 AND d.status = 'active' AND d.account_id = $1
         ORDER BY t.device_id LIMIT $4`,
        [s.account_id, s.target, s.cursor ?? '', this.o.pageSize],
      );
      const apps: Map<string, AppServices> = await appServicesOf(q, s.account_id, [...new Set(devices.map((d) => d.app_id))], this.o.simulatedApns);
      const message = typeof s.message === 'string' ? (JSON.parse(s.message) as SendMessage) : s.message;
      const jobs = batchJobs({
        accountId: s.account_id,
        pushId: s.id,
        message,
        devices,
        apps,
        batchSize: this.o.batchSize,
        keepSent: false,
        deadlineAt: new Date(s.created_at).getTime() + deadlineOf(message, this.o.deadlineMs),
      });
      const targeted = jobs.reduce((sum, j) => sum + j.payload.devices.length, 0);
      enqueued = await this.o.pipeline().enqueue(q, jobs);
      const last = devices.length < this.o.pageSize;
      const { rows: after } = await q.query<{ pending: number }>(
        `UPDATE push_sends SET cursor = $2, targeted = targeted + $3, pending = pending + $3, status = CASE WHEN $4::boolean THEN 'sending' ELSE status END, next_expand_at = now()
         WHERE id = $1 RETURNING pending`,
        [s.id, devices.length ? devices[devices.length - 1].id : s.cursor, targeted, last],
      );
      if (last && after[0].pending <= 0) {
        const done = await completeSend(q, s.id, now);
        if (done) {
          await this.o.events.emit(q, await completionEvent(q, done));
          emitted = true;
        }
      }
      return devices.length;
    });
    if (enqueued.length) this.o.pipeline().wake(enqueued);
    if (emitted) this.o.events.wake();
    return n;
  }
}
