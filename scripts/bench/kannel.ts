/**
 * Ferry against Kannel in one run on one machine. Kannel (Debian's bearerbox + smsbox: HTTP sendsms → SMPP binds,
 * dlr-mask 31, delivery reports and queue in memory, logging as much as Ferry does) and Ferry (its configured
 * storage) each send through an SMSC simulator of their own, run identically, with the same binds, window, message
 * count, message mix and HTTP concurrency. Rounds alternate: Ferry's REST path cold (the first messages after start
 * on a fresh database), then `--pairs` times: Kannel sendsms, Ferry REST /v1/sms/send, Ferry SMPP → SMPP. Nothing is
 * installed: without bearerbox and smsbox the scenario prints one skip line and exits 0.
 *
 *   npm run bench -- kannel [--messages 20000] [--concurrency 64] [--pairs 2] [--binds 4] [--window 100]
 */
import { connect } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { packageRoot } from '../../src/util/paths.js';
import { LoadGen } from './harness/ipc.js';
import { Kannel, kannelBinaries, kannelLogging } from './harness/kannel.js';
import type { HttpRunResult, HttpSendConfig } from './harness/loadgen-http-send.js';
import type { SmppLoadConfig, SmppLoadResult } from './harness/loadgen-smpp.js';
import type { PgCounters } from './harness/stack.js';
import { Child, freePort } from './harness/proc.js';
import { fmt, printJson, printTable, verdict, type Row } from './harness/report.js';
import { runScenario, type ScenarioContext } from './harness/scenario.js';
import { PRELOAD_USAGE, preloadBudgetSeconds } from './harness/preload-events.js';
import { checkWebhookOptions, EVENTS_PER_MESSAGE, webhookDaemonEnv, WEBHOOK_FLAGS, WebhookBench } from './harness/webhooks.js';

const TARGET_REST_RATIO = 1.5;
const TARGET_SMPP_FINAL_RATIO = 2.5;
const TARGET_REST_CPU = 0.6;
const TARGET_SMPP_CPU = 0.45;
/** Postgres rows written per webhook event on the success path (the event path's design target). */
const TARGET_ROWS_PER_EVENT = 1.5;

const USAGE = `usage: npm run bench -- kannel [options]

  --messages N      messages per round (default 20000)
  --concurrency C   HTTP connections for both gateways' HTTP send (default 64)
  --pairs P         alternating rounds of Kannel, Ferry REST and Ferry SMPP after Ferry's cold round (default 2)
  --binds B         SMPP binds: Kannel's and Ferry's to their SMSC, and the SMPP load's to Ferry (default 4)
  --window W        outstanding submits per bind, everywhere (default 100)
  --webhooks        Ferry's bench account gets a webhook endpoint taking every event (a loopback receiver), so
                    its receipts reach an application as Kannel's reach the dlr-url; each Ferry round then
                    also reports when its last webhook was in
  --webhook-batch N with --webhooks: the endpoint takes batched delivery, arrays of up to N events
  --webhook-cap N   with --webhooks: webhooks.maxConcurrencyPerEndpoint (default: the daemon's, 4)
${PRELOAD_USAGE}

Kannel logs as much as Ferry: --log-level sets both (warn, the default: Kannel at warning, no access logs;
info: Kannel at info with its access logs on, as Ferry's access log is).
Needs bearerbox and smsbox (Debian package kannel); prints one skip line without them.
Targets are stated for --backend redis+postgres.`;

if (!process.argv.includes('--help') && !kannelBinaries()) {
  process.stdout.write('bench kannel: skipped: bearerbox and smsbox are not installed (apt-get install kannel)\n');
  process.exit(0);
}

type Path = 'kannel' | 'ferry-rest' | 'ferry-smpp';
interface Round {
  path: Path;
  label: string;
  accepted: number;
  acceptedPerSec: number;
  /** Every receipt in the gateway's hands: Ferry's ledger final (SMPP: at the customer); Kannel's receipts acknowledged to its SMSC. */
  finalPerSec: number;
  /**
   * Receipts at the application: Kannel, every final delivery report at the dlr-url (an HTTP callback from smsbox,
   * two per message with dlr-mask 31); Ferry with --webhooks, every webhook of the round at the receiver.
   */
  appFinalPerSec?: number;
  /** CPU seconds per 1,000 accepted messages, by process. */
  cpuPer1000: Record<string, number>;
  /** The gateway and its stores: Kannel's two boxes; Ferry's daemon, Postgres and Redis. */
  gatewayCpuPer1000: number;
  /** Ferry on Postgres: what the database did per accepted message over the round (receipts included). */
  pgPerMessage?: { commits: number; inserted: number; updated: number; deleted: number; tables: Record<string, number> };
  notes: string[];
}

/** Waits until something listens on the port (the simulator logs nothing that says so here). */
async function listening(port: number, child: Child): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (!child.running) throw new Error(`${child.name} exited:\n${child.lastLines()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      }).once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`${child.name} did not listen on ${port}`);
}

await runScenario({
  name: 'kannel',
  flags: ['messages', 'concurrency', 'pairs', 'binds', 'window', ...WEBHOOK_FLAGS],
  stackOverrides: (args) => (args.has('webhooks') ? { daemonEnv: webhookDaemonEnv(args) } : {}),
  usage: USAGE,
  validate: checkWebhookOptions,
  defaults: { upstreamBinds: 4, upstreamWindow: 100 },
  budgetSeconds: (args, common) => (1 + 3 * args.number('pairs', 2)) * (120 + common.finalTimeoutSeconds) + preloadBudgetSeconds(args),
  async run(ctx: ScenarioContext) {
    const { args, common, stack, machine, log, addChild, mark, cpuSince, fail } = ctx;
    const messages = args.number('messages', 20_000, { min: 100, max: 1_000_000, integer: true });
    const connections = args.number('concurrency', 64, { min: 1, max: 1000, integer: true });
    const pairs = args.number('pairs', 2, { min: 1, max: 10, integer: true });
    const binds = args.number('binds', common.upstreamBinds, { min: 1, max: 64, integer: true });
    const window = args.number('window', common.upstreamWindow, { min: 1, max: 10_000, integer: true });
    if (binds !== common.upstreamBinds || window !== common.upstreamWindow) {
      throw new Error('--binds/--window and --upstream-binds/--upstream-window disagree: give one pair');
    }

    // Kannel's SMSC: the same simulator program with the same options as Ferry's.
    const kannelAcks: Array<{ at: number; acked: number }> = [];
    const kannelAcked = () => kannelAcks.at(-1)?.acked ?? 0;
    const kannelSimPort = await freePort();
    const simCommand = stack.runtime === 'dist' ? [join(packageRoot, 'dist/cli/index.js')] : ['--import', 'tsx', join(packageRoot, 'src/cli/index.ts')];
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FERRY_') && k !== 'DATABASE_URL' && k !== 'REDIS_URL'));
    const kannelSim = new Child(
      'kannel-simulator',
      process.execPath,
      [...simCommand, 'sim', '--port', String(kannelSimPort), '--receipt-delay-ms', String(common.receiptDelayMs), '--stats-interval-ms', '100', '--log-level', 'info'],
      {
        cwd: packageRoot,
        env,
        logDir: stack.logDir,
        // Receipts Kannel acknowledged to its SMSC, over time: when every receipt of a round was in Kannel's hands.
        onStdoutLine: (line) => {
          if (!line.includes('"receiptsAcked"')) return;
          try {
            kannelAcks.push({ at: performance.now(), acked: (JSON.parse(line) as { stats: { receiptsAcked: number } }).stats.receiptsAcked });
          } catch {
            /* not a stats line */
          }
        },
      },
    );
    addChild('kannel-simulator', kannelSim);
    await listening(kannelSimPort, kannelSim);
    const kannel = new Kannel({ runDir: stack.runDir, logDir: stack.logDir, smscPort: kannelSimPort, binds, window, env, logLevel: common.logLevel });
    try {
      await kannel.start();
    } finally {
      if (kannel.bearerbox) addChild('bearerbox', kannel.bearerbox);
      if (kannel.smsbox) addChild('smsbox', kannel.smsbox);
    }
    const logging = kannelLogging(common.logLevel).describe;
    log(`Kannel: bearerbox pid ${kannel.bearerbox!.pid}, smsbox pid ${kannel.smsbox!.pid} (sendsms :${kannel.ports.sendsms}), ${binds} binds × window ${window} to simulator :${kannelSimPort}; ${logging}`);

    const password = 'bench123';
    const account = await stack.createAccount('bench', password, binds);
    const webhooks = args.has('webhooks') ? await WebhookBench.start(ctx, stack.apiUrl, account) : undefined;
    /** With --webhooks: per 1,000 messages a second of the round from `started` to its last webhook, or undefined. */
    const webhooksIn = async (label: string, started: number, accepted: number): Promise<number | undefined> => {
      if (!webhooks) return undefined;
      const want = ferryAccepted * EVENTS_PER_MESSAGE;
      const { stats, doneAt } = await webhooks.drain(want, finalMs);
      if (doneAt === null) fail(`${label}: ${stats.distinct} of ${want} webhook events within ${common.finalTimeoutSeconds} s`);
      return doneAt === null ? NaN : accepted / ((doneAt - started) / 1000);
    };
    const httpConfig: HttpSendConfig = {
      kannelUrl: kannel.sendsmsUrl,
      kannelUser: kannel.user,
      kannelPassword: kannel.password,
      ferryUrl: stack.apiUrl,
      ferryToken: account.token,
      dlrPort: await freePort(),
    };
    const http = new LoadGen('loadgen-http-send.ts', httpConfig, stack.logDir);
    addChild('loadgen-http', http.child);
    await http.next('ready', 60_000);

    const finalMs = common.finalTimeoutSeconds * 1000;
    let ferryAccepted = 0;
    const rounds: Round[] = [];
    const per1000 = (cpu: Record<string, number>, names: string[], n: number): Record<string, number> =>
      Object.fromEntries(names.map((p) => [p, ((cpu[p] ?? NaN) / Math.max(1, n)) * 1000]));
    const sum = (r: Record<string, number>, names: string[]) => names.reduce((s, p) => s + (r[p] ?? 0), 0);

    /** Postgres counters per message between two readings (the server publishes them within about a second). */
    const pgPer = (a: PgCounters | null, b: PgCounters | null, n: number): Round['pgPerMessage'] => {
      if (!a || !b) return undefined;
      const d = (x: number, y: number) => (y - x) / Math.max(1, n);
      const tables = Object.fromEntries(
        Object.entries(b.tables)
          .map(([t, v]) => [t, d(a.tables[t] ?? 0, v)] as const)
          .filter(([, v]) => v >= 0.01)
          .sort((x, y) => y[1] - x[1]),
      );
      return { commits: d(a.commits, b.commits), inserted: d(a.inserted, b.inserted), updated: d(a.updated, b.updated), deleted: d(a.deleted, b.deleted), tables };
    };
    const pgAfter = async (): Promise<PgCounters | null> => {
      await sleep(1500);
      return stack.pgCounters();
    };

    const httpRound = async (target: 'kannel' | 'ferry', label: string): Promise<Round> => {
      const pg0 = target === 'ferry' ? await stack.pgCounters() : null;
      const acked0 = kannelAcked();
      const cpu0 = mark();
      const started = performance.now();
      http.send({ type: 'run', target, count: messages, connections, finalTimeoutSeconds: common.finalTimeoutSeconds });
      const r = (await http.next<{ type: string; result: HttpRunResult }>('run-done', finalMs + 600_000)).result;
      const notes: string[] = [];
      const non2xx = Object.entries(r.byStatus).filter(([c]) => !c.startsWith('2'));
      if (non2xx.length || r.errors) notes.push(`not accepted: ${non2xx.map(([c, n]) => `HTTP ${c} ${n}`).join(', ')}${r.errors ? ` errors ${r.errors}` : ''}`);
      let finalSeconds = r.finalSeconds;
      let appFinalPerSec: number | undefined;
      if (target === 'ferry') {
        ferryAccepted += r.accepted;
        const at = await stack.waitFinal(ferryAccepted, finalMs);
        finalSeconds = at === null ? NaN : (at - started) / 1000;
        if (at === null) fail(`${label}: not every accepted message was final within ${common.finalTimeoutSeconds} s`);
        appFinalPerSec = await webhooksIn(label, started, r.accepted);
      } else {
        if (!Number.isFinite(finalSeconds)) fail(`${label}: ${r.finalReports} of ${r.accepted} final delivery reports within ${common.finalTimeoutSeconds} s`);
        // Like Ferry's ledger turning final: every receipt acknowledged by Kannel to its SMSC (the simulator's count,
        // logged every 100 ms: the line that shows the last acknowledgement may come after the last dlr-url call).
        const allAcked = () => kannelAcks.find((a) => a.at >= started && a.acked - acked0 >= r.accepted)?.at;
        for (const until = performance.now() + 5000; allAcked() === undefined && performance.now() < until; ) await sleep(50);
        const inAt = allAcked();
        if (inAt === undefined) fail(`${label}: the SMSC saw ${kannelAcked() - acked0} of ${r.accepted} receipts acknowledged`);
        appFinalPerSec = r.accepted / finalSeconds;
        finalSeconds = inAt === undefined ? NaN : (inAt - started) / 1000;
      }
      const cpu = cpuSince(cpu0);
      const names = target === 'kannel' ? ['bearerbox', 'smsbox', 'kannel-simulator', 'loadgen-http'] : ['daemon', 'postgres', 'redis', 'simulator', 'loadgen-http', ...(webhooks ? ['receiver'] : [])];
      const c = per1000(cpu, names, r.accepted);
      return {
        path: target === 'kannel' ? 'kannel' : 'ferry-rest',
        label,
        accepted: r.accepted,
        acceptedPerSec: r.accepted / Math.max(1e-9, r.sendSeconds),
        finalPerSec: r.accepted / finalSeconds,
        appFinalPerSec,
        cpuPer1000: c,
        gatewayCpuPer1000: sum(c, target === 'kannel' ? ['bearerbox', 'smsbox'] : ['daemon', 'postgres', 'redis']),
        pgPerMessage: target === 'ferry' ? pgPer(pg0, await pgAfter(), r.accepted) : undefined,
        notes,
      };
    };

    const smppRound = async (label: string): Promise<Round> => {
      const config: SmppLoadConfig = {
        host: '127.0.0.1',
        port: stack.ports.smpp,
        systemId: account.systemId,
        password,
        binds,
        window,
        warmupMessages: 0,
        messages,
        seconds: 300,
        rate: 0,
        finalTimeoutSeconds: common.finalTimeoutSeconds,
        mix: 'single',
      };
      const gen = new LoadGen('loadgen-smpp.ts', config, stack.logDir);
      addChild('loadgen-smpp', gen.child);
      const pg0 = await stack.pgCounters();
      await gen.next('measure-start', 120_000);
      const cpu0 = mark();
      const started = performance.now();
      await gen.next('submitted', 400_000);
      await gen.next('measure-end', finalMs + 30_000);
      const { result } = await gen.next<{ type: string; result: SmppLoadResult }>('result', 30_000);
      const m = result.measured;
      ferryAccepted += m.accepted;
      const appFinalPerSec = await webhooksIn(label, started, m.accepted);
      const cpu = cpuSince(cpu0);
      await gen.finish();
      if (m.final !== m.accepted) fail(`${label}: ${m.accepted - m.final} of ${m.accepted} accepted messages got no receipt`);
      const notes = Object.keys(m.refused).length ? [`refused: ${JSON.stringify(m.refused)}`] : [];
      const c = per1000(cpu, ['daemon', 'postgres', 'redis', 'simulator', 'loadgen-smpp', ...(webhooks ? ['receiver'] : [])], m.accepted);
      return {
        path: 'ferry-smpp',
        label,
        accepted: m.accepted,
        acceptedPerSec: m.accepted / Math.max(1e-9, m.submitSeconds),
        finalPerSec: m.accepted / Math.max(1e-9, m.finalSeconds),
        appFinalPerSec,
        cpuPer1000: c,
        gatewayCpuPer1000: sum(c, ['daemon', 'postgres', 'redis']),
        pgPerMessage: pgPer(pg0, await pgAfter(), m.accepted),
        notes,
      };
    };

    const note = (r: Round) =>
      log(`${r.label}: ${fmt.int(r.accepted)} accepted at ${fmt.rate(r.acceptedPerSec)}, final at ${fmt.rate(r.finalPerSec)}, gateway + stores ${fmt.cpu(r.gatewayCpuPer1000)} CPU-s/1,000`);
    const cold = await httpRound('ferry', 'Ferry REST, cold (first messages after start)');
    note(cold);
    for (let p = 1; p <= pairs; p++) {
      for (const run of [() => httpRound('kannel', `Kannel sendsms, pair ${p}`), () => httpRound('ferry', `Ferry REST, pair ${p}`), () => smppRound(`Ferry SMPP, pair ${p}`)]) {
        const r = await run();
        note(r);
        rounds.push(r);
      }
    }
    http.send({ type: 'run', exit: true });
    await http.finish();

    const ledger = await stack.ledgerCounts();
    if (ledger.open !== 0) fail(`${ledger.open} Ferry messages are not final (${JSON.stringify(ledger.byStatus)})`);
    if (ledger.total !== ferryAccepted) fail(`Ferry's ledger holds ${ledger.total} messages; the load generators saw ${ferryAccepted} accepted`);

    const rows: Row[] = [];
    const showCpu = (r: Round) =>
      Object.entries(r.cpuPer1000)
        .map(([k, v]) => `${k} ${fmt.cpu(v)}`)
        .join(', ');
    for (const r of [cold, ...rounds]) {
      rows.push({ figure: `${r.label}: accepted / final (every receipt in)`, value: `${fmt.rate(r.acceptedPerSec)} / ${fmt.rate(r.finalPerSec)}${r.notes.length ? ` (${r.notes.join('; ')})` : ''}` });
      if (r.appFinalPerSec !== undefined) {
        rows.push({ figure: `${r.label}: ${r.path === 'kannel' ? 'every final report at the dlr-url' : 'every webhook at the receiver'}`, value: fmt.rate(r.appFinalPerSec) });
      }
      const cpuTarget = r.path === 'ferry-rest' ? TARGET_REST_CPU : r.path === 'ferry-smpp' ? TARGET_SMPP_CPU : undefined;
      rows.push({
        figure: `${r.label}: CPU-s per 1,000, gateway + stores`,
        value: `${fmt.cpu(r.gatewayCpuPer1000)} (${showCpu(r)})`,
        target: cpuTarget !== undefined && r !== cold ? `≤ ${cpuTarget}` : '',
        verdict: cpuTarget !== undefined && r !== cold && common.backend === 'redis+postgres' ? verdict(r.gatewayCpuPer1000 <= cpuTarget) : '',
      });
      const pgm = r.pgPerMessage;
      if (pgm) {
        const top = Object.entries(pgm.tables).slice(0, 6).map(([t, v]) => `${t} ${v.toFixed(2)}`);
        rows.push({
          figure: `${r.label}: Postgres per message`,
          value: `${pgm.commits.toFixed(2)} commits; rows inserted ${pgm.inserted.toFixed(2)}, updated ${pgm.updated.toFixed(2)}, deleted ${pgm.deleted.toFixed(2)} (${top.join(', ')})`,
        });
        if (webhooks) {
          // Rows of the webhook tables (events, ticks, cursors, the retry set) per event delivered.
          const perEvent = Object.entries(pgm.tables).filter(([t]) => t.startsWith('webhook_')).reduce((n, [, v]) => n + v, 0) / EVENTS_PER_MESSAGE;
          rows.push({
            figure: `${r.label}: Postgres rows written per webhook event`,
            value: perEvent.toFixed(2),
            target: `≤ ${TARGET_ROWS_PER_EVENT}`,
            verdict: common.backend === 'redis+postgres' ? verdict(perEvent <= TARGET_ROWS_PER_EVENT) : '',
          });
        }
      }
    }
    const ratios: Array<Record<string, number>> = [];
    for (let p = 0; p < pairs; p++) {
      const [k, rest, smpp] = rounds.slice(p * 3, p * 3 + 3);
      const x = {
        restAccepted: rest.acceptedPerSec / k.acceptedPerSec,
        restFinal: rest.finalPerSec / k.finalPerSec,
        smppAccepted: smpp.acceptedPerSec / k.acceptedPerSec,
        smppFinal: smpp.finalPerSec / k.finalPerSec,
        ...(rest.appFinalPerSec !== undefined && k.appFinalPerSec !== undefined ? { restAtApp: rest.appFinalPerSec / k.appFinalPerSec } : {}),
      };
      ratios.push(x);
      const pg = common.backend === 'redis+postgres';
      rows.push(
        { figure: `pair ${p + 1}: Ferry REST / Kannel sendsms, accepted`, value: `${x.restAccepted.toFixed(2)}×`, target: `≥ ${TARGET_REST_RATIO}×`, verdict: pg ? verdict(x.restAccepted >= TARGET_REST_RATIO) : '' },
        { figure: `pair ${p + 1}: Ferry REST / Kannel sendsms, every receipt in`, value: `${x.restFinal.toFixed(2)}×`, target: `≥ ${TARGET_REST_RATIO}×`, verdict: pg ? verdict(x.restFinal >= TARGET_REST_RATIO) : '' },
        ...(x.restAtApp !== undefined ? [{ figure: `pair ${p + 1}: Ferry REST webhooks / Kannel dlr-url, every receipt at the application`, value: `${x.restAtApp.toFixed(2)}×` }] : []),
        { figure: `pair ${p + 1}: Ferry SMPP / Kannel sendsms, accepted`, value: `${x.smppAccepted.toFixed(2)}×` },
        { figure: `pair ${p + 1}: Ferry SMPP / Kannel sendsms, every receipt in`, value: `${x.smppFinal.toFixed(2)}×`, target: `≥ ${TARGET_SMPP_FINAL_RATIO}×`, verdict: pg ? verdict(x.smppFinal >= TARGET_SMPP_FINAL_RATIO) : '' },
      );
    }
    rows.push({ figure: 'Ferry ledger', value: `${fmt.int(ledger.total)} rows: ${Object.entries(ledger.byStatus).map(([s, c]) => `${s} ${fmt.int(c)}`).join(', ')}` });
    rows.push(...(webhooks?.preloadRows() ?? []));
    const command = `npm run bench -- kannel ${process.argv.slice(2).join(' ')}`.trim();
    printTable(
      `Ferry bench · kannel · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      [
        `machine: ${machine.cores} × ${machine.model}, ${machine.memoryGiB} GiB, Node ${machine.node}; Ferry backend ${common.backend}, daemon via ${stack.runtime}; every process on this machine`,
        `command: ${command}`,
        `load: ${fmt.int(messages)} messages a round, one segment each (every tenth UCS-2); HTTP: autocannon, ${connections} keep-alive connections (Kannel GET /cgi-bin/sendsms ` +
          `dlr-mask 31 to a dlr-url in the load generator; Ferry POST /v1/sms/send); SMPP: ${binds} binds × window ${window}; each gateway → its own simulator, ` +
          `${binds} binds × window ${window}, receipt delay ${common.receiptDelayMs} ms. Kannel 1.4 keeps its queue and delivery reports in memory; Ferry commits each message before answering.`,
        `logging: ${logging} (Ferry's access log is its info level).`,
        'final = every receipt in: Kannel, acknowledged to its SMSC (its dlr-url callbacks, two per message, are shown apart); Ferry REST, every message final in the ledger; Ferry SMPP, every receipt at the SMPP customer.',
        'Ferry REST cold is the first round after start on a fresh database; every later round runs warm, in the order shown.',
      ],
      rows,
    );
    if (common.json) printJson({
        scenario: 'kannel',
        date: new Date().toISOString(),
        backend: common.backend,
        machine,
        messages,
        connections,
        binds,
        window,
        cold,
        rounds,
        ratios,
        ledger,
        preloadedEvents: webhooks?.preloadJson() ?? null,
      });
  },
});
