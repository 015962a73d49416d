import { Command, InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import type { CliContext } from '../../cli/cli-context.js';
import { serveUntilSignal } from './serve-until-signal.js';
import type { SimMessage } from './sim-admin-routes.js';
import { startSimulator, type OutcomeRule, type SimulatorBehaviour, type SimulatorOptions } from './simulator.js';

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

/** `PATTERN=STAT`, repeatable: the receipt outcome for recipients matching an exact number or a prefix ending in `*`. */
function outcomeRule(value: string, previous: OutcomeRule[] = []): OutcomeRule[] {
  const m = /^(\+?[0-9]{1,20}\*?)=([A-Za-z]+)$/.exec(value);
  if (!m) throw new InvalidArgumentError('expected NUMBER=STAT or PREFIX*=STAT, e.g. 23320*=UNDELIV');
  return [...previous, { destination: m[1], stat: m[2].toUpperCase() }];
}

function ratio(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('expected a number between 0 and 1');
  return n;
}

function onOff(value: string): boolean {
  if (value === 'on' || value === 'true' || value === 'yes') return true;
  if (value === 'off' || value === 'false' || value === 'no') return false;
  throw new InvalidArgumentError('expected on or off');
}

interface SimCliOptions {
  host: string;
  port: number;
  systemId?: string;
  password?: string;
  acceptLatencyMs: number;
  receiptDelayMs: number;
  deliveredRatio: number;
  outcome?: OutcomeRule[];
  receiptJitterMs: number;
  duplicateReceipts: number;
  throttleRatio: number;
  disconnectAfter: number;
  neverRespond?: boolean;
  receiptsFirst?: boolean;
  refuseBinds?: number;
  idFormat: 'hex' | 'dec';
  receiptIdStyle: 'same' | 'decimal' | 'padded-upper';
  redeliverReceipts: boolean;
  answerQueries: boolean;
  seed?: number;
  statsIntervalMs: number;
  logLevel: string;
}

/** `ferry sim messages`: what the daemon's embedded simulator received, newest first (e.g. to read an OTP code). */
function simMessagesCommand(ctx: CliContext): Command {
  const cmd: Command = new Command('messages');
  return cmd
    .description("what the running daemon's embedded SMSC simulator received, newest first (read an OTP code without a handset)")
    .option('--to <number>', 'only messages to this number (international digits)')
    .option('--limit <n>', 'at most this many (1-500)', int, 20)
    .option('--wait <seconds>', 'wait up to this long for at least one message (scripts: the SMS is sent a moment after the API answers)', int, 0)
    .option('--json', 'print JSON')
    .action(async (o: { to?: string; limit: number; wait: number; json?: boolean }) => {
      const q = new URLSearchParams({ limit: String(o.limit) });
      if (o.to) q.set('to', o.to);
      const admin = ctx.admin(cmd);
      const until = Date.now() + o.wait * 1000;
      let data = await admin.call<{ messages: SimMessage[] }>('GET', `/admin/sim/messages?${q}`);
      while (!data.messages.length && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        data = await admin.call<{ messages: SimMessage[] }>('GET', `/admin/sim/messages?${q}`);
      }
      if (!data.messages.length && o.wait > 0) throw ctx.error(`no message${o.to ? ` to ${o.to}` : ''} reached the simulator within ${o.wait} s`);
      if (o.json) return ctx.print(data.messages, true);
      if (!data.messages.length) return void process.stdout.write('(none)\n');
      for (const m of data.messages) {
        const parts = m.parts > 1 ? ` (${m.parts} parts${m.complete ? '' : ', incomplete'})` : '';
        process.stdout.write(`${m.receivedAt}  ${m.from} -> ${m.to.join(', ')}${parts}\n  ${m.text}\n`);
      }
    });
}

/** `ferry sim behaviour`: shows or changes what the daemon's embedded simulator does (outcomes by recipient, …). */
function simBehaviourCommand(ctx: CliContext): Command {
  const cmd: Command = new Command('behaviour');
  return cmd
    .description("show or change what the running daemon's embedded SMSC simulator does; no option shows it")
    .option('--outcome <pattern=stat>', 'receipt outcome for recipients matching NUMBER or PREFIX* (repeatable; replaces the rules)', outcomeRule)
    .option('--clear-outcomes', 'drop every recipient rule')
    .option('--delivered-ratio <ratio>', 'share of other receipts that are DELIVRD (the rest UNDELIV)', ratio)
    .option('--accept-latency-ms <ms>', 'delay before each submit_sm_resp', int)
    .option('--receipt-delay-ms <ms>', 'delay before each delivery receipt', int)
    .option('--receipt-jitter-ms <ms>', 'up to this much extra random delay per receipt (reorders them)', int)
    .option('--duplicate-receipts <ratio>', 'share of receipts sent twice', ratio)
    .option('--throttle-ratio <ratio>', 'share of submits answered ESME_RTHROTTLED', ratio)
    .option('--redeliver-receipts <on|off>', 'offer an unacknowledged receipt again (off: drop it, like SMSCs that never resend)', onOff)
    .option('--answer-queries <on|off>', 'answer query_sm (off: ESME_RINVCMDID, like an SMSC without it)', onOff)
    .option('--json', 'print JSON')
    .action(async (o: Record<string, unknown>) => {
      const patch: Partial<SimulatorBehaviour> = {};
      if (o.outcome) patch.outcomeRules = o.outcome as OutcomeRule[];
      if (o.clearOutcomes) patch.outcomeRules = [];
      if (o.deliveredRatio !== undefined) patch.outcomes = { DELIVRD: o.deliveredRatio as number, UNDELIV: 1 - (o.deliveredRatio as number) };
      if (o.acceptLatencyMs !== undefined) patch.acceptLatencyMs = o.acceptLatencyMs as number;
      if (o.receiptDelayMs !== undefined) patch.receiptDelayMs = o.receiptDelayMs as number;
      if (o.receiptJitterMs !== undefined) patch.receiptJitterMs = o.receiptJitterMs as number;
      if (o.duplicateReceipts !== undefined) patch.duplicateReceiptRatio = o.duplicateReceipts as number;
      if (o.throttleRatio !== undefined) patch.throttleRatio = o.throttleRatio as number;
      if (o.redeliverReceipts !== undefined) patch.redeliverReceipts = o.redeliverReceipts as boolean;
      if (o.answerQueries !== undefined) patch.answerQueries = o.answerQueries as boolean;
      const admin = ctx.admin(cmd);
      const data = Object.keys(patch).length ? await admin.call('PATCH', '/admin/sim/behaviour', patch) : await admin.call('GET', '/admin/sim/behaviour');
      ctx.print(data, !!o.json);
    });
}

/**
 * The SMSC simulator's commands, on `ferry sim` itself (historic: `ferry sim` is `ferry sim run`): `run` runs one in
 * the foreground, logging JSON lines, until SIGINT/SIGTERM; `messages` and `behaviour` read and script the daemon's
 * embedded one.
 */
export function smscSimulatorCli(sim: Command, ctx: CliContext): void {
  sim.addCommand(simRunCommand(), { isDefault: true });
  sim.addCommand(simMessagesCommand(ctx));
  sim.addCommand(simBehaviourCommand(ctx));
}

/** The standalone simulator; the default of `ferry sim`, so `ferry sim --port 2776` runs it. */
function simRunCommand(): Command {
  return new Command('run')
    .alias('smpp')
    .description('run a standalone SMSC simulator (SMPP v3.4) for tests and demos; nothing is delivered anywhere (the default of ferry sim)')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', int, 2776)
    .option('--system-id <id>', 'accept only this system_id (default: any)')
    .option('--password <password>', 'password for --system-id')
    .option('--accept-latency-ms <ms>', 'delay before each submit_sm_resp', int, 0)
    .option('--receipt-delay-ms <ms>', 'delay before each delivery receipt', int, 1000)
    .option('--delivered-ratio <ratio>', 'share of receipts that are DELIVRD (the rest UNDELIV)', ratio, 0.95)
    .option('--outcome <pattern=stat>', 'receipt outcome for recipients matching NUMBER or PREFIX*, before the ratio (repeatable)', outcomeRule)
    .option('--receipt-jitter-ms <ms>', 'up to this much extra random delay per receipt (reorders them)', int, 0)
    .option('--duplicate-receipts <ratio>', 'share of receipts sent twice', ratio, 0)
    .option('--throttle-ratio <ratio>', 'share of submits answered ESME_RTHROTTLED', ratio, 0)
    .option('--disconnect-after <n>', 'drop a connection at its Nth submit (0 never)', int, 0)
    .option('--never-respond', 'never answer submits (for timeout tests)')
    .option('--receipts-first', 'send receipts before the submit_sm_resp')
    .option('--refuse-binds <status>', 'answer every bind with this command_status (e.g. 13 = ESME_RBINDFAIL)', int)
    .option('--id-format <format>', 'message ids: hex or dec', 'hex')
    .option('--receipt-id-style <style>', 'receipt ids: same, decimal or padded-upper', 'same')
    .option('--no-redeliver-receipts', 'drop a receipt that was not acknowledged instead of offering it again')
    .option('--no-answer-queries', 'answer query_sm with ESME_RINVCMDID')
    .option('--seed <n>', 'seed for outcome and throttle dice', int)
    .option('--stats-interval-ms <ms>', 'log counters this often (0 never)', int, 10_000)
    .option('--log-level <level>', 'pino log level', 'info')
    .action(async (opts: SimCliOptions) => {
      if (opts.idFormat !== 'hex' && opts.idFormat !== 'dec') throw new InvalidArgumentError('--id-format must be hex or dec');
      const logger = pino({ name: 'ferry-sim', level: opts.logLevel });
      const options: SimulatorOptions = {
        host: opts.host,
        port: opts.port,
        systemId: opts.systemId,
        password: opts.password,
        acceptLatencyMs: opts.acceptLatencyMs,
        receiptDelayMs: opts.receiptDelayMs,
        outcomes: { DELIVRD: opts.deliveredRatio, UNDELIV: 1 - opts.deliveredRatio },
        outcomeRules: opts.outcome ?? [],
        receiptJitterMs: opts.receiptJitterMs,
        duplicateReceiptRatio: opts.duplicateReceipts,
        throttleRatio: opts.throttleRatio,
        disconnectAfterSubmits: opts.disconnectAfter,
        neverRespond: opts.neverRespond ?? false,
        receiptsBeforeResponse: opts.receiptsFirst ?? false,
        refuseBinds: opts.refuseBinds ?? 0,
        idFormat: opts.idFormat,
        receiptIdStyle: opts.receiptIdStyle,
        redeliverReceipts: opts.redeliverReceipts,
        answerQueries: opts.answerQueries,
        seed: opts.seed,
        logger,
      };
      const sim = await startSimulator(options);
      await serveUntilSignal(sim, logger, opts.statsIntervalMs);
      await sim.close();
    });
}
