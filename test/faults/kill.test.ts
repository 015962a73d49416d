// SIGKILL of the daemon under SMPP load, then a restart on the same storage: every submit the customer got
// submit_sm_resp OK for is in the ledger and ends final; upstream duplicates (at-least-once resends) are counted.
import t from 'tap';
import { backendLabel } from '../helpers/env.js';
import { waitFor } from '../helpers/wait.js';
import { CustomerClient } from '../smpp/customer/customer-client.js';
import { countBy, killableDaemon, duplicates, settle, simulator, smppLoad, upstreamConfig } from './common.js';
import { gatewayOf } from '../helpers/daemon.js';

const KILL_AFTER_ACKS = 400;

t.test(`SIGKILL under SMPP load, restart on the same storage: nothing acknowledged is lost (${backendLabel})`, async (t) => {
  const sim = await simulator(t);
  const { proc, smppPort, systemId, restart } = await killableDaemon(
    t,
    {
      FERRY_CONFIG: upstreamConfig(sim.port),
      FERRY_SMPP_SIMULATOR_ENABLED: 'off',
      // Messages the killed process had leased come back after this.
      FERRY_DISPATCH_LEASE_SECONDS: '5',
    },
    'killme',
  );

  const clients: CustomerClient[] = [];
  for (let i = 0; i < 2; i++) {
    const { client, resp } = await CustomerClient.bound(smppPort, 'transceiver', systemId, 'secret1');
    t.equal(resp.command_status, 0, 'bound');
    clients.push(client);
  }
  let next = 0;
  let killedAt = 0;
  const load = smppLoad(() => (killedAt ? null : clients[next++ % clients.length]), { tag: 'kill', workers: 16, max: 20_000, maxMs: 30_000, stop: () => killedAt > 0, timeoutMs: 3000 });
  await waitFor(() => sim.received().length >= KILL_AFTER_ACKS, 30_000, 'upstream traffic');
  proc.child.kill('SIGKILL');
  killedAt = Date.now();
  const exit = await proc.exited;
  t.equal(exit.signal, 'SIGKILL', 'the daemon was killed mid-traffic');
  const result = await load;
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  const acked = [...result.acked.keys()];
  t.ok(acked.length >= KILL_AFTER_ACKS / 2, `${acked.length} submits acknowledged before the kill (${result.unanswered} unanswered)`);

  // Restart (in this process) on the same database / data folder / Redis prefix.
  const t0 = Date.now();
  const restarted = await restart();
  const ledger = gatewayOf(restarted.daemon).ledger;
  const { open, missing, statuses, ms } = await settle(ledger, acked, 60_000);
  t.same(missing.slice(0, 5), [], `every acknowledged message is in the ledger (${missing.length} missing)`);
  t.same(open.slice(0, 5), [], `every acknowledged message ends final (${open.length} still open)`);
  const dups = duplicates(sim, 'kill');
  const sentTexts = new Set(sim.received().filter((m) => m.text.startsWith('kill')).map((m) => m.text));
  const lostUpstream = acked.filter((id) => !sentTexts.has(result.acked.get(id)!)).filter((id) => statuses.get(id) === 'delivered');
  t.same(lostUpstream, [], 'every message the ledger calls delivered reached the upstream');
  t.comment(
    `kill: backend=${backendLabel} acked=${acked.length} lost=${missing.length + open.length} duplicates=${dups} ` +
      `upstreamSubmits=${sim.received().length} finalAfterRestart=${ms}ms (restart+settle ${Date.now() - t0}ms) statuses=${JSON.stringify(countBy(statuses.values()))}`,
  );
});
