/**
 * `--webhooks` for the smpp, rest and kannel scenarios: the bench account gets one webhook endpoint subscribed to every
 * event (`*`), pointed at the bench's receiver (webhook-receiver.ts, its own process), so each message's three
 * events (sms.queued, sms.sent, and its final one) are delivered as for a customer who follows every message. A
 * phase then counts once its webhooks are in too, and its CPU figures include the work of delivering them.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { packageRoot } from '../../../src/util/paths.js';
import { Args } from './args.js';
import { checkPreloadRead, PRELOAD_USAGE, preloadEvents, preloadEventsOption, type PreloadResult } from './preload-events.js';
import { Child, freePort } from './proc.js';
import { fmt, type Row } from './report.js';
import type { CommonOptions, ScenarioContext } from './scenario.js';
import type { ReceiverStats } from './webhook-receiver.js';

/** Events per accepted SMS: sms.queued, sms.sent, and one of sms.delivered / undelivered / failed. */
export const EVENTS_PER_MESSAGE = 3;

/** The options of a scenario that takes --webhooks. */
export const WEBHOOK_FLAGS = ['webhooks', 'webhook-batch', 'webhook-cap', 'preload-events'] as const;

export const WEBHOOKS_USAGE = `  --webhooks           a webhook endpoint of the bench account takes every event (a loopback receiver
                       answering 200 at once); a phase counts once its webhooks are in
  --webhook-batch N    with --webhooks: the endpoint takes batched delivery, arrays of up to N events
  --webhook-cap N      with --webhooks: webhooks.maxConcurrencyPerEndpoint (default: the daemon's, 4)
${PRELOAD_USAGE}`;

/** Refuses webhook options that cannot apply (before anything starts): see preloadEventsOption. */
export function checkWebhookOptions(args: Args, common: CommonOptions): void {
  preloadEventsOption(args, common);
}

/** Daemon settings a loopback receiver needs (private targets are refused by default). */
export const WEBHOOK_DAEMON_ENV: Record<string, string> = { FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' };

/** The daemon's settings for --webhooks: WEBHOOK_DAEMON_ENV, and --webhook-cap when given. */
export function webhookDaemonEnv(args: Args): Record<string, string> {
  const cap = args.number('webhook-cap', 0, { min: 0, max: 100, integer: true });
  return cap > 0 ? { ...WEBHOOK_DAEMON_ENV, FERRY_WEBHOOKS_MAX_CONCURRENCY_PER_ENDPOINT: String(cap) } : WEBHOOK_DAEMON_ENV;
}

export class WebhookBench {
  private constructor(
    private readonly port: number,
    readonly child: Child,
    /** With --preload-events: what was loaded before the endpoint existed. */
    readonly preloaded: PreloadResult | undefined,
  ) {}

  /**
   * Starts the receiver (sampled as `receiver`) and subscribes the bench account (`accountId`, whose API key is
   * `token`) to every event. With --preload-events the event log is filled first, so that the endpoint's cursor
   * starts past all of it.
   */
  static async start(ctx: ScenarioContext, apiUrl: string, account: { accountId: string; token: string }, authScheme = 'Basic'): Promise<WebhookBench> {
    const batch = new Args().number('webhook-batch', 0, { min: 0, max: 1000, integer: true });
    const preload = preloadEventsOption(ctx.args, ctx.common);
    let preloaded: PreloadResult | undefined;
    if (preload > 0) {
      preloaded = await preloadEvents(ctx.stack.dbUrl!, account.accountId, preload, ctx.log);
      ctx.log(`preload done: ${WebhookBench.preloadLine(preloaded)}`);
    }
    const port = await freePort();
    let listening!: () => void;
    const ready = new Promise<void>((r) => (listening = r));
    const child = new Child('receiver', process.execPath, ['--import', 'tsx', join(packageRoot, 'scripts/bench/harness/webhook-receiver.ts'), '--port', String(port)], {
      cwd: packageRoot,
      env: process.env,
      logDir: ctx.stack.logDir,
      onStdoutLine: (line) => {
        if (line.startsWith('webhook receiver listening')) listening();
      },
    });
    ctx.addChild('receiver', child);
    const died = child.exited.then(() => {
      throw new Error(`webhook receiver exited:\n${child.lastLines()}`);
    });
    await Promise.race([ready, died, sleep(30_000).then(() => Promise.reject(new Error('webhook receiver did not start within 30 s')))]);
    const bench = new WebhookBench(port, child, preloaded);
    const res = await fetch(`${apiUrl}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `${authScheme} ${account.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, events: ['*'], description: 'bench receiver', ...(batch ? { batch: { maxEvents: batch, maxWaitMs: 100 } } : {}) }),
    });
    const body = (await res.json()) as { success: boolean; code: string; message: string; data?: { id: string; secret?: string } };
    if (!body.success || !body.data?.secret) throw new Error(`creating the bench webhook endpoint: HTTP ${res.status} ${body.code}: ${body.message}`);
    if (preloaded) await checkPreloadRead(ctx.stack.dbUrl!, body.data.id, preloaded.txids);
    await fetch(`http://127.0.0.1:${port}/secret`, { method: 'PUT', body: body.data.secret });
    ctx.log(`webhook receiver pid ${child.pid} on 127.0.0.1:${port}, subscribed to every event${batch ? `, in arrays of up to ${batch}` : ''}`);
    return bench;
  }

  /** One line for the log and the table: how many events, how long they took, how large the table is. */
  static preloadLine(p: PreloadResult): string {
    const perMillion = p.loadSeconds / Math.max(1e-9, p.events / 1_000_000);
    return (
      `${fmt.int(p.events)} events (${p.accounts} accounts, ${p.statements} statement${p.statements === 1 ? '' : 's'}) loaded in ${p.loadSeconds.toFixed(1)} s ` +
      `(${perMillion.toFixed(1)} s per million), VACUUM (ANALYZE) ${p.vacuumSeconds.toFixed(1)} s; ` +
      `webhook_events ${fmt.mb(p.totalBytes)} MB with TOAST and indexes, payload ${Math.round(p.payloadBytes)} B on average`
    );
  }

  /** The table's row for --preload-events (none without it). */
  preloadRows(): Row[] {
    return this.preloaded ? [{ figure: 'webhooks: event log preloaded before the first round', value: WebhookBench.preloadLine(this.preloaded) }] : [];
  }

  /** --preload-events figures for the JSON line (null without it). */
  preloadJson(): Record<string, number> | null {
    if (!this.preloaded) return null;
    const { txids: _txids, ...figures } = this.preloaded;
    return figures;
  }

  /** What the receiver has; `from`/`to` (epoch ms) bound its window figures. */
  async stats(from = 0, to = Number.MAX_SAFE_INTEGER): Promise<ReceiverStats> {
    return (await (await fetch(`http://127.0.0.1:${this.port}/stats?from=${from}&to=${to}`)).json()) as ReceiverStats;
  }

  /**
   * Waits until at least `expected` distinct events are in and no more arrive for a second (or `timeoutMs` passes).
   * Returns the stats and the performance.now() of the last new event seen (null on a timeout).
   */
  async drain(expected: number, timeoutMs: number): Promise<{ stats: ReceiverStats; doneAt: number | null }> {
    const deadline = performance.now() + timeoutMs;
    let last = -1;
    let lastChange = performance.now();
    for (;;) {
      const s = await this.stats();
      const now = performance.now();
      if (s.distinct !== last) {
        last = s.distinct;
        lastChange = now;
      }
      if (s.distinct >= expected && now - lastChange >= 1000) return { stats: s, doneAt: lastChange };
      if (now > deadline) return { stats: s, doneAt: null };
      await sleep(100);
    }
  }

  /**
   * The table's webhook rows for a phase: `s` with its window set to the phase, `expected` events of the whole run,
   * `messages` accepted in the phase, `allInSeconds` how long after its start the last of its webhooks arrived.
   */
  static rows(s: ReceiverStats, expected: number, messages: number, allInSeconds: number, cpuReceiver: number): Row[] {
    const w = s.window;
    return [
      {
        figure: 'webhooks: events received (distinct, run total) / expected',
        value:
          `${fmt.int(s.distinct)} / ${fmt.int(expected)}` +
          `${s.duplicates ? `, ${fmt.int(s.duplicates)} sent again` : ''}${s.badSignatures ? `, ${fmt.int(s.badSignatures)} BAD SIGNATURES` : ''}`,
      },
      { figure: 'webhooks: delivered rate (events of the phase, start to last one in)', value: fmt.rate((messages * EVENTS_PER_MESSAGE) / Math.max(1e-9, allInSeconds), 'events/s') },
      { figure: 'webhooks: event created → received, p50 / p95 / p99 / max', value: fmt.latency(w.latency) },
      ...Object.entries(w.latencyByType)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([type, p]) => ({ figure: `webhooks: … ${type}`, value: fmt.latency(p) })),
      { figure: 'CPU s per 1,000 messages: webhook receiver', value: fmt.cpu((cpuReceiver / Math.max(1, messages)) * 1000) },
    ];
  }
}
