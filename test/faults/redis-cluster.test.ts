// A Redis Cluster master killed under SMPP and REST load (the scale-out issue's fault test): the daemon runs on a
// three-master Cluster (scripts/ci/redis-cluster.sh through test/helpers/redis-cluster.ts) with the SMS queue split
// into three shards, one per master; the master holding the queue's shard 0 (and its shard-count key) is SIGKILLed
// and its replica promoted. Every acknowledged message (submit_sm_resp OK, HTTP 200) must be in the ledger and end
// final, having reached the upstream; refusals during the failover must be the documented back-pressure codes;
// upstream duplicates (sends are at-least-once, docs/reliability.md) may only be of messages in flight during the
// failover; and sending must resume by itself: the seconds from the kill until it did are reported, not asserted.
import t from 'tap';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { FINAL_STATUSES, type MessageStatus } from '../../src/ledger/types.js';
import { CommandStatus, statusName } from '../../src/smpp/constants.js';
import { queueShardName } from '../../src/store/redis/keys.js';
import { LogLines, accountWithKey, call, gatewayOf, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { DATABASE_URL } from '../helpers/env.js';
import { testKeyPrefix } from '../helpers/redis.js';
import { until } from '../helpers/wait.js';
import { redisClusterSkip, startRedisCluster, type Failover } from '../helpers/redis-cluster.js';
import { CustomerClient } from '../smpp/customer/customer-client.js';
import { DEST, countBy, settle, simulator, sleep, smppLoad, upstreamConfig, type LoadResult } from './common.js';

/** Its own ports (16640..16645, bus +10000): no other test's cluster meets it. */
const BASE_PORT = 16640;
const SHARDS = 3;
/** The SMS module's queue (src/gateway.ts). */
const QUEUE = 'messages';
const SMPP_TAG = 'rcl';
const REST_TAG = 'rest-rcl';
/**
 * Bounds of the load, within LOAD_MAX_MS whatever happens. Sends are accepted during the failover too (about 80 SMPP
 * and 40 REST a second here), so the bounds must outlast warm-up, failover and the phase after the promotion, about
 * 15 s: 600 SMPP ran out before the promotion once (379 acknowledged during a 4.8 s failover).
 */
const SMPP_MAX = 2000;
const REST_MAX = 1000;
const REST_WORKERS = 3;
const LOAD_MAX_MS = 40_000;
/** Acknowledgements of each kind before the kill: traffic is flowing end to end. */
const WARM_ACKS = 40;
/** And at least this long of load before the kill. */
const WARM_MS = 3000;
/** After the promotion: at least this long, and this many acknowledgements of each kind, of load. */
const AFTER_MS = 4000;
const AFTER_ACKS = 20;
/**
 * Submits answered within this long after the promotion were sent during the failover: they count as in flight
 * during it (a request the daemon held across the promotion is answered just after it).
 */
const IN_FLIGHT_TAIL_MS = 1000;
const SETTLE_MS = 60_000;
/** The SMPP customer waits this long for a submit_sm_resp: past ioredis' own retries and command timeout. */
const SUBMIT_TIMEOUT_MS = 12_000;

/** Refusals docs/smpp.md and docs/sms.md name for back-pressure and storage outages (nothing accepted). */
const SMPP_BACK_PRESSURE = new Set<number>([CommandStatus.ESME_RTHROTTLED, CommandStatus.ESME_RSYSERR]);
const REST_BACK_PRESSURE = new Set(['429 RATE_LIMIT_EXCEEDED', '503 SERVICE_UNAVAILABLE']);

t.setTimeout(280_000);

const skip = redisClusterSkip() || (DATABASE_URL ? false : 'needs DATABASE_URL (Postgres): the Cluster failover test runs on the Postgres backend only');

t.test(`a Redis Cluster master killed under SMPP and REST load (${SHARDS} queue shards)`, { skip }, async (t) => {
  const cluster = await startRedisCluster({ basePort: BASE_PORT });
  let d: TestDaemon | null = null;
  let client: CustomerClient | null = null;
  // One teardown, in this order: the customer, the daemon (its clients quit while every slot is served), the cluster.
  t.teardown(async () => {
    await client?.close().catch(() => undefined);
    await d?.stop().catch(() => undefined);
    await cluster.stop();
  });

  const shardsOn = await queueShardMasters(Number(new URL(cluster.seeds.split(',')[0]).port));
  t.equal(shardsOn.size, SHARDS, `the ${SHARDS} queue shards are on ${SHARDS} masters`);
  // The master with the most shards; among equals the one with shard 0, which also holds the shard-count key.
  const [victim, victimShards] = [...shardsOn].sort((a, b) => b[1].length - a[1].length || Math.min(...a[1]) - Math.min(...b[1]))[0];

  const sim = await simulator(t);
  const logs = new LogLines();
  d = await startDaemon(
    {
      REDIS_URL: cluster.seeds,
      FERRY_REDIS_CLUSTER: 'true',
      FERRY_REDIS_QUEUE_SHARDS: String(SHARDS),
      FERRY_REDIS_KEY_PREFIX: testKeyPrefix(),
      FERRY_CONFIG: upstreamConfig(sim.port),
      FERRY_SMPP_SIMULATOR_ENABLED: 'off',
      // Writes the old master acknowledged but had not replicated are gone with it: a lease comes back after a lease
      // (short here), a lost push is pushed again by the reconciler's pass (short here; 30 s / 60 s by default).
      FERRY_DISPATCH_LEASE_SECONDS: '5',
      FERRY_DISPATCH_RECONCILE_SECONDS: '2',
      FERRY_DISPATCH_RECONCILE_STALE_SECONDS: '3',
      FERRY_LOG_LEVEL: 'info',
    },
    undefined,
    logs,
  );
  const daemon = d;
  const ledger = gatewayOf(daemon.daemon).ledger;
  const smppPort = Number(daemon.daemon.addresses.smpp.split(':').pop());
  await daemon.daemon.accounts.create({ name: 'cluster-smpp', smppPassword: 'secret1' });
  const { token } = await accountWithKey(daemon, 'cluster-rest');

  // A customer rebinds when its bind is lost (bounded by the load's own time).
  const bind = async (): Promise<void> => {
    const { client: c, resp } = await CustomerClient.bound(smppPort, 'transceiver', 'cluster-smpp', 'secret1');
    if (resp.command_status !== 0) throw new Error(`bind refused: ${statusName(resp.command_status)}`);
    client = c;
  };
  await bind();
  let rebinds = 0;

  let stopped = false;
  const stop = (): boolean => stopped;
  const smpp: LoadResult = { acked: new Map(), refused: new Map(), unanswered: 0 };
  const rest = newRestLoad();
  const smppRun = smppLoad(
    () => {
      const c = client as CustomerClient | null;
      if (c?.socket.destroyed && !stopped && rebinds < 20) {
        rebinds++;
        client = null;
        void bind().catch(() => undefined);
      }
      return client;
    },
    { tag: SMPP_TAG, workers: 4, max: SMPP_MAX, maxMs: LOAD_MAX_MS, stop, pauseMs: 20, timeoutMs: SUBMIT_TIMEOUT_MS },
    smpp,
  );
  const restRun = restLoad(daemon.api, token, rest, stop);

  const loadFrom = Date.now();
  await waitBounded(() => Date.now() - loadFrom >= WARM_MS && smpp.acked.size >= WARM_ACKS && rest.acked.size >= WARM_ACKS, 20_000, 'acknowledgements before the kill');
  // What the ledger had recorded just before the kill: a message already recorded as submitted is never sent again.
  const snapshotAt = Date.now();
  const smppAtSnapshot = smpp.acked.size;
  const unsentAtKill = await unsent(ledger, [...smpp.acked.keys(), ...rest.acked.keys()]);
  const smppAtKill = smpp.acked.size;
  // A few ms early: killMaster reads the topology and the pid (two redis-cli calls) before its SIGKILL.
  const killedAt = Date.now();
  const failover: Failover = await cluster.killMaster(victim);
  const promotedAt = Date.now();
  const smppAtPromotion = smpp.acked.size;
  t.equal(failover.killed, victim, `master ${victim} (queue shard ${victimShards.join(', ')}) killed`);
  t.ok(failover.promoted > 0, `its replica ${failover.promoted} serves its slots (${failover.seconds} s)`);
  await sleep(IN_FLIGHT_TAIL_MS);
  const smppInFlightEnd = smpp.acked.size;
  const restInFlightEnd = promotedAt + IN_FLIGHT_TAIL_MS;

  await waitBounded(
    () => Date.now() - promotedAt >= AFTER_MS && smpp.acked.size - smppAtPromotion >= AFTER_ACKS && [...rest.acked.values()].filter((a) => a.at > promotedAt).length >= AFTER_ACKS,
    30_000,
    'acknowledgements after the promotion',
  ).catch((err: Error) => t.fail(err.message));
  stopped = true;
  await Promise.all([smppRun, restRun]);

  // Acknowledged: SMPP ids in the order they were acknowledged (a Map keeps insertion order), REST ids with the time.
  const smppIds = [...smpp.acked.keys()];
  const restIds = [...rest.acked.keys()];
  const all = [...smppIds, ...restIds];
  const textOf = new Map<string, string>([...smpp.acked, ...[...rest.acked].map(([id, a]) => [id, a.text] as [string, string])]);
  const acceptedAfterKill = new Set([...smppIds.slice(smppAtKill), ...restIds.filter((id) => rest.acked.get(id)!.at >= killedAt)].map((id) => textOf.get(id)!));
  const smppAfterPromotion = smppIds.length - smppAtPromotion;
  const restAfterPromotion = restIds.filter((id) => rest.acked.get(id)!.at > promotedAt).length;
  const restDuring = restIds.filter((id) => rest.acked.get(id)!.at >= killedAt && rest.acked.get(id)!.at <= promotedAt).length;
  t.ok(smppAfterPromotion > 0, `SMPP submits are acknowledged after the promotion (${smppAfterPromotion})`);
  t.ok(restAfterPromotion > 0, `REST sends are accepted after the promotion (${restAfterPromotion})`);

  const smppRefused = Object.fromEntries([...smpp.refused].map(([code, n]) => [statusName(code), n]));
  t.same(
    [...smpp.refused.keys()].filter((code) => !SMPP_BACK_PRESSURE.has(code)).map(statusName),
    [],
    `SMPP refusals are ESME_RTHROTTLED / ESME_RSYSERR only: ${JSON.stringify(smppRefused)}`,
  );
  t.equal(smpp.unanswered, 0, `every submit_sm was answered within ${SUBMIT_TIMEOUT_MS / 1000} s`);
  t.same(
    Object.keys(rest.refused).filter((code) => !REST_BACK_PRESSURE.has(code)),
    [],
    `REST refusals are 429 RATE_LIMIT_EXCEEDED / 503 SERVICE_UNAVAILABLE only: ${JSON.stringify(rest.refused)}`,
  );

  // Nothing acknowledged is lost: in the ledger, final, and (when the upstream's receipt said so) at the upstream.
  const { open, missing, statuses, ms } = await settle(ledger, all, SETTLE_MS);
  t.same(missing.slice(0, 5), [], `every acknowledged message is in the ledger (${missing.length} missing)`);
  t.same(open.slice(0, 5), [], `every acknowledged message ends final (${open.length} open after ${ms} ms)`);
  const upstream = sim.received().filter((m) => m.text.startsWith(`${SMPP_TAG} `) || m.text.startsWith(`${REST_TAG} `));
  const atUpstream = new Set(upstream.map((m) => m.text));
  const notSent = all.filter((id) => statuses.get(id) === 'delivered' && !atUpstream.has(textOf.get(id)!));
  t.same(notSent.slice(0, 5), [], `every message the ledger calls delivered reached the upstream (${notSent.length} did not)`);
  const failed = all.filter((id) => statuses.has(id) && statuses.get(id) !== 'delivered');
  t.same(
    failed.slice(0, 5).map((id) => `${id} ${statuses.get(id)}`),
    [],
    `every acknowledged message is delivered (the simulator delivers all): ${JSON.stringify(countBy(statuses.values()))}`,
  );
  const lost = missing.length + open.length + notSent.length + failed.length;

  // Nothing stuck in the queue: leases the failover lost come back and are skipped; nothing died.
  const queue = gatewayOf(daemon.daemon).queue;
  const drained = await waitBounded(
    async () => {
      const st = await queue.stats();
      return st.leased === 0 && st.lanes.every((l) => l.due === 0 && l.scheduled === 0);
    },
    20_000,
    'the queue drained',
  ).then(
    () => true,
    () => false,
  );
  const queueStats = await queue.stats();
  t.ok(drained, `the queue holds nothing after every message ended final: ${JSON.stringify(queueStats)}`);
  t.equal(queueStats.dead, 0, 'no queue item died');

  // Duplicates: only of messages in flight during the failover. In flight = acknowledged but not yet recorded as
  // submitted just before the kill, or acknowledged between that look and shortly after the promotion; a submit the
  // customer never got an answer for was in flight by definition.
  const inFlight = new Set<string>([
    ...unsentAtKill,
    ...smppIds.slice(smppAtSnapshot, smppInFlightEnd),
    ...restIds.filter((id) => {
      const at = rest.acked.get(id)!.at;
      return at >= snapshotAt && at <= restInFlightEnd;
    }),
  ]);
  const idOfText = new Map([...textOf].map(([id, text]) => [text, id]));
  const dupTexts = [...new Set(upstream.filter((m) => m.duplicateOf > 0).map((m) => m.text))];
  const dupCopies = upstream.filter((m) => m.duplicateOf > 0).length;
  const outside = dupTexts.filter((text) => {
    const id = idOfText.get(text);
    return id !== undefined && !inFlight.has(id);
  });
  t.same(outside.slice(0, 5), [], `upstream duplicates only of the ${inFlight.size} messages in flight during the failover (${dupCopies} duplicate sends of ${dupTexts.length} messages)`);

  const { stallMs, recoveredMs } = recovery(upstream, killedAt, acceptedAfterKill);
  t.ok(recoveredMs >= 0, 'a message accepted after the kill reached the upstream');
  const pushFailed = logs.find('queue push failed; the reconciler will push these messages again').reduce((n, l) => n + Number(l.count ?? 0), 0);
  const reconciled = logs.find('reconciler pushed accepted messages to the queue').filter((l) => !l.startup).reduce((n, l) => n + Number(l.pushed ?? 0), 0);
  t.comment(
    `redis-cluster: acknowledged smpp=${smppIds.length} rest=${restIds.length} (during the failover ${smppAtPromotion - smppAtKill}/${restDuring}, after it ${smppAfterPromotion}/${restAfterPromotion}) ` +
      `refused smpp=${JSON.stringify(smppRefused)} rest=${JSON.stringify(rest.refused)} unanswered=${smpp.unanswered} network=${rest.network} rebinds=${rebinds} ` +
      `lost=${lost} duplicates=${dupCopies} (in flight ${inFlight.size}) failover=${failover.seconds}s (master ${failover.killed} with shard ${victimShards.join(',')} → ${failover.promoted}) ` +
      `recovery=${seconds(recoveredMs)}s stall=${seconds(stallMs)}s allFinal=${ms}ms pushFailed=${pushFailed} reconciled=${reconciled} ` +
      `leaseFailed=${logs.find(/^queue lease failed/).length} ackFailed=${logs.find(/^queue ack failed/).length}`,
  );
});

/** Master port → the queue's shards whose hash tag it serves (CLUSTER SLOTS of one node). */
async function queueShardMasters(port: number): Promise<Map<number, number[]>> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  try {
    await redis.connect();
    const ranges = (await redis.cluster('SLOTS')) as unknown as Array<[number, number, [string, number, ...unknown[]]]>;
    const out = new Map<number, number[]>();
    for (let s = 0; s < SHARDS; s++) {
      const slot = calculateSlot(`q:${queueShardName(QUEUE, s)}`);
      const owner = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1];
      if (owner === undefined) throw new Error(`no master serves slot ${slot} (queue shard ${s})`);
      out.set(owner, [...(out.get(owner) ?? []), s]);
    }
    return out;
  } finally {
    redis.disconnect();
  }
}

interface RestLoad {
  /** Ferry id → the text sent and when the 200 came. */
  acked: Map<string, { text: string; at: number }>;
  /** `status code` of every refusal → count. */
  refused: Record<string, number>;
  /** Requests that got no HTTP answer. */
  network: number;
}

function newRestLoad(): RestLoad {
  return { acked: new Map(), refused: {}, network: 0 };
}

/** POST /v1/sms/send from REST_WORKERS paced loops, texts `${REST_TAG} n`: until stopped, REST_MAX sends or LOAD_MAX_MS. */
async function restLoad(api: string, token: string, out: RestLoad, stop: () => boolean): Promise<void> {
  const deadline = Date.now() + LOAD_MAX_MS;
  let n = 0;
  const worker = async (): Promise<void> => {
    while (n < REST_MAX && !stop() && Date.now() < deadline) await restSend(api, token, `${REST_TAG} ${n++}`, out);
  };
  await Promise.all(Array.from({ length: REST_WORKERS }, worker));
}

/** One send; a refusal is counted by HTTP status and error code, a 200 recorded with its time. */
async function restSend(api: string, token: string, text: string, out: RestLoad): Promise<void> {
  try {
    const r = await call(api, 'POST', '/v1/sms/send', { token, body: { to: `+${DEST}`, from: 'Ferry', message: text } });
    if (r.status === 200) out.acked.set(String(r.json.data.messageId), { text, at: Date.now() });
    else {
      const key = `${r.status} ${r.json?.code ?? ''}`.trim();
      out.refused[key] = (out.refused[key] ?? 0) + 1;
    }
  } catch {
    out.network++;
  }
  await sleep(30);
}

/** The ids the ledger has not yet recorded as submitted (or final): a crash or a lost lease may send them again. */
async function unsent(ledger: ReturnType<typeof gatewayOf>['ledger'], ids: string[]): Promise<string[]> {
  const rows = await ledger.getMany(ids);
  const sentOrFinal = (s: MessageStatus): boolean => s === 'submitted' || FINAL_STATUSES.includes(s);
  return ids.filter((id) => !rows.has(id) || !sentOrFinal(rows.get(id)!.status));
}

/**
 * When sending resumed after the kill: the longest silence in upstream arrivals from the kill on (the stall), and the
 * first arrival at or after its end of a message accepted after the kill, both in ms from the kill (-1: none).
 */
function recovery(arrivals: Array<{ text: string; receivedAt: number }>, killedAt: number, acceptedAfterKill: Set<string>): { stallMs: number; recoveredMs: number } {
  const times = arrivals.filter((a) => a.receivedAt >= killedAt).sort((a, b) => a.receivedAt - b.receivedAt);
  let prev = killedAt;
  let stallMs = 0;
  let stallEnd = killedAt;
  for (const a of times) {
    if (a.receivedAt - prev > stallMs) {
      stallMs = a.receivedAt - prev;
      stallEnd = a.receivedAt;
    }
    prev = a.receivedAt;
  }
  const first = times.find((a) => a.receivedAt >= stallEnd && acceptedAfterKill.has(a.text));
  return { stallMs, recoveredMs: first ? first.receivedAt - killedAt : -1 };
}

const seconds = (ms: number): string => (ms < 0 ? 'never' : (ms / 1000).toFixed(1));

/** Polls `cond` until it holds; rejects after `limitMs`, naming what was awaited. */
function waitBounded(cond: () => boolean | Promise<boolean>, limitMs: number, what: string): Promise<boolean> {
  return until(cond, (ok) => ok, limitMs).catch((err: Error) => {
    throw new Error(`${what}: ${err.message}`);
  });
}
