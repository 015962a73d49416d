// Receipts in flight when the daemon is SIGKILLed, from an SMSC that never sends a receipt again once the bind it
// was meant for is gone: after the restart, query_sm on a live bind of the upstream ends every message, and the
// history says the state came from query_sm.
import t from 'tap';
import { FINAL_STATUSES } from '../../src/ledger/types.js';
import { backendLabel } from '../helpers/env.js';
import { waitFor } from '../helpers/wait.js';
import { CustomerClient } from '../smpp/customer/customer-client.js';
import { countBy, killableDaemon, settle, simulator, smppLoad, sleep, upstreamConfig } from './common.js';
import { gatewayOf } from '../helpers/daemon.js';

const MESSAGES = 120;

t.test(`receipts lost with a SIGKILL, an SMSC that never resends them: query_sm ends every message (${backendLabel})`, async (t) => {
  // Receipts come 8 s after each submit, and one not acknowledged is dropped, never offered again. The delay is what
  // keeps every receipt in flight until the kill: 2 s was not enough on a loaded machine (the submits took longer).
  const sim = await simulator(t, { receiptDelayMs: 8000, redeliverReceipts: false });
  const { proc, smppPort, systemId, restart } = await killableDaemon(
    t,
    {
      // The first life never gets to ask (afterSeconds 600): what is recovered is recovered after the restart.
      FERRY_CONFIG: upstreamConfig(sim.port, { receiptQuery: { afterSeconds: 600 } }),
      FERRY_SMPP_SIMULATOR_ENABLED: 'off',
      FERRY_DISPATCH_LEASE_SECONDS: '5',
    },
    'recover',
  );
  const { client } = await CustomerClient.bound(smppPort, 'transceiver', systemId, 'secret1');
  const result = await smppLoad(() => client, { tag: 'recover', workers: 8, max: MESSAGES, maxMs: 15_000 });
  await client.close().catch(() => undefined);
  const acked = [...result.acked.keys()];
  t.equal(acked.length, MESSAGES, 'every submit acknowledged');
  await waitFor(() => sim.received().length >= MESSAGES, 10_000, 'the upstream has every message');
  await sleep(300); // the daemon records its submits (a submit it had not recorded is sent again after the restart)
  t.equal(sim.stats.receiptsAcked, 0, 'no receipt had reached Ferry yet');

  proc.child.kill('SIGKILL');
  t.equal((await proc.exited).signal, 'SIGKILL', 'the daemon was killed with every receipt in flight');
  await waitFor(() => sim.stats.receiptsDropped >= MESSAGES, 30_000, 'the SMSC drops the receipts it could not deliver');

  // Restart on the same storage, now asking about messages silent for a second.
  const restarted = await restart(
    { FERRY_CONFIG: upstreamConfig(sim.port, { receiptQuery: { afterSeconds: 1, intervalSeconds: 1, maxPerSecond: 500 } }) },
  );
  const ledger = gatewayOf(restarted.daemon).ledger;
  const { open, missing, statuses } = await settle(ledger, acked, 20_000);
  t.same(missing, [], 'every acknowledged message is in the ledger');
  t.same(open.slice(0, 5), [], `every message ends final (${open.length} still open)`);
  t.ok(sim.stats.queries >= MESSAGES - sim.received().filter((m) => m.duplicateOf > 0).length, `the upstream was asked (${sim.stats.queries} query_sm)`);

  const sentTwice = new Set(sim.received().filter((m) => m.duplicateOf > 0).map((m) => m.text));
  const byQuery: string[] = [];
  const unexplained: string[] = [];
  for (const id of acked) {
    const history = await ledger.history(id);
    const last = history.filter((e) => FINAL_STATUSES.includes(e.status)).pop();
    if (last?.detail?.source === 'query_sm') byQuery.push(id);
    // Only a message sent again after the restart (its submit record was lost with the kill) may end by a receipt.
    else if (!sentTwice.has(result.acked.get(id)!)) unexplained.push(`${id}: ${JSON.stringify(last ?? null)}`);
  }
  t.same(unexplained.slice(0, 3), [], 'every message whose receipt was lost ended through query_sm');
  t.ok(byQuery.length > 0, `${byQuery.length} messages ended by query_sm`);
  const owed = await restarted.daemon.backends.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM smpp_outbox WHERE kind = 'receipt' AND message_id = ANY($1::text[])`,
    [byQuery],
  );
  t.equal(owed.rows[0].n, byQuery.length, 'and a receipt is owed to the customer for each, as for a real receipt');
  t.comment(
    `receipt recovery: backend=${backendLabel} messages=${acked.length} byQuery=${byQuery.length} resent=${sentTwice.size} ` +
      `queries=${sim.stats.queries} statuses=${JSON.stringify(countBy(statuses.values()))}`,
  );
});
