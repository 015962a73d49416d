/**
 * One run of the `cluster` scenario (spawned by scripts/bench/cluster.ts, once per queueShards value, against the
 * cluster it started): a daemon on that Redis Cluster with FERRY_REDIS_QUEUE_SHARDS, the SMPP load of the smpp
 * scenario (receipts on), and each master's command counters read when the measured phase starts and once every
 * receipt is in and the ledger is final. Reports its figures to the parent over IPC; the stack is the harness's
 * (always cleaned up, a watchdog on the whole run).
 */
import { UsageError } from './args.js';
import { LoadGen, report } from './ipc.js';
import type { SmppLoadConfig, SmppLoadResult, SmppPhaseResult } from './loadgen-smpp.js';
import { runScenario } from './scenario.js';
import { clusterMasters, countersSince, flushMasters, readCounters, type ClusterMaster, type MasterCounters } from './redis-cluster.js';

export type ClusterRunResult = {
  type: 'result';
  shards: number;
  runtime: string;
  masters: Array<ClusterMaster & { counters: MasterCounters }>;
  measured: Omit<SmppPhaseResult, 'receiptStates'>;
  warmupAccepted: number;
  /** CPU seconds of each process over the measured phase (daemon, simulator, loadgen, machine.*). */
  cpu: Record<string, number>;
  /** Seconds from the first measured submit until the counters were read again (every receipt in, ledger final). */
  windowSeconds: number;
  counted: boolean;
};

// Not past the bench that started it (should it be killed, its watchdog stops the cluster): clean up as on a SIGTERM.
process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));

await runScenario({
  name: 'cluster',
  flags: ['messages', 'seconds', 'binds', 'window', 'warmup', 'shards', 'cluster-port'],
  usage: 'run by scripts/bench/cluster.ts (npm run bench -- cluster --help)',
  validate: (args, common) => {
    if (!process.send) throw new UsageError('run by scripts/bench/cluster.ts only (it reports over IPC)');
    if (common.backend !== 'redis+postgres') throw new UsageError('needs --backend redis+postgres');
    if (!args.has('cluster-port')) throw new UsageError('needs --cluster-port (the seed node cluster.ts started)');
    args.number('cluster-port', 0, { min: 1024, max: 65535, integer: true });
  },
  stackOverrides: (args) => ({
    daemonEnv: { FERRY_REDIS_CLUSTER: 'true', FERRY_REDIS_QUEUE_SHARDS: String(args.number('shards', 3, { min: 1, max: 64, integer: true })) },
  }),
  budgetSeconds: (args, common) => Math.max(10, args.number('seconds', 60)) + args.number('seconds', 60) + 30 + 2 * common.finalTimeoutSeconds,
  async run(ctx) {
    const { args, common, stack, log, addChild, mark, cpuSince, fail } = ctx;
    const shards = args.number('shards', 3, { min: 1, max: 64, integer: true });
    const binds = args.number('binds', 4, { min: 1, max: 100, integer: true });
    const window = args.number('window', 100, { min: 1, max: 10_000, integer: true });
    const messages = args.number('messages', 20_000, { min: 1, max: 10_000_000, integer: true });
    const seconds = args.number('seconds', 60, { min: 1, max: 3600 });
    const warmupMessages = args.number('warmup', 2000, { min: 0, max: 1_000_000, integer: true });
    const masters = await clusterMasters(args.number('cluster-port', 0));
    if (masters.length !== 3) throw new Error(`the cluster has ${masters.length} masters serving slots, not 3`);
    try {
      const password = 'bench123';
      const account = await stack.createAccount('bench', password, binds);
      const config: SmppLoadConfig = {
        host: '127.0.0.1',
        port: stack.ports.smpp,
        systemId: account.systemId,
        password,
        binds,
        window,
        warmupMessages,
        messages,
        seconds,
        rate: 0,
        finalTimeoutSeconds: common.finalTimeoutSeconds,
      };
      const gen = new LoadGen('loadgen-smpp.ts', config, stack.logDir);
      addChild('loadgen', gen.child);
      log(`queueShards=${shards}: load generator pid ${gen.pid}: ${binds} binds × window ${window}, warm-up ${warmupMessages}, then ${messages} messages or ${seconds} s`);

      // The warm-up's receipts are in before measure-start, so the counters see the measured messages only.
      await gen.next('measure-start', 120_000 + seconds * 1000);
      const counters0 = await readCounters(masters);
      const cpu0 = mark();
      const startedAt = performance.now();
      const submitted = await gen.next<{ type: string; offered: number; accepted: number }>('submitted', (seconds + 90) * 1000);
      log(`queueShards=${shards}: submitted ${submitted.offered}, accepted ${submitted.accepted}; waiting for receipts`);
      await gen.next('measure-end', (common.finalTimeoutSeconds + 30) * 1000);
      // Receipts are at the customer; the ledger's last updates (and their queue acks) may trail them a little.
      if ((await stack.waitFinal(0, 30_000)) === null) log('ledger still has open messages after 30 s');
      const counters1 = await readCounters(masters);
      const windowSeconds = (performance.now() - startedAt) / 1000;
      const cpu = cpuSince(cpu0);
      const { result } = await gen.next<{ type: string; result: SmppLoadResult }>('result', 30_000);
      await gen.finish();

      const m = result.measured;
      const ledger = await stack.ledgerCounts();
      const acceptedAll = m.accepted + result.warmup.accepted;
      if (m.final !== m.accepted) fail(`queueShards=${shards}: ${m.accepted - m.final} of ${m.accepted} accepted messages got no receipt within ${common.finalTimeoutSeconds} s`);
      if (ledger.total !== acceptedAll) fail(`queueShards=${shards}: the ledger holds ${ledger.total} messages; the load generator had ${acceptedAll} accepted`);
      if (ledger.open !== 0) fail(`queueShards=${shards}: ${ledger.open} messages in the ledger are not final (${JSON.stringify(ledger.byStatus)})`);
      const delta = countersSince(counters0, counters1);
      const { receiptStates: _states, ...measured } = m;
      const out: ClusterRunResult = {
        type: 'result',
        shards,
        runtime: stack.runtime,
        masters: masters.map((mm, i) => ({ ...mm, counters: delta[i] })),
        measured,
        warmupAccepted: result.warmup.accepted,
        cpu,
        windowSeconds,
        counted: m.final === m.accepted && ledger.total === acceptedAll && ledger.open === 0,
      };
      await report(out);
    } finally {
      // The daemon first (it writes keys while it runs), then every key: the harness's cleanup deletes its prefix with
      // a multi-key DEL on the seed node, which a Cluster refuses for keys of different slots.
      await stack.stopDaemon();
      await flushMasters(masters).catch((err: Error) => log(`could not flush the cluster: ${err.message}`));
    }
  },
});
