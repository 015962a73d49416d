// The daemon's periodic maintenance runs on the platform's one scheduler (named, counted in ferry_job_runs_total,
// placed by role, cluster jobs leased), not on loops of its own: a started daemon lists each of these jobs, and the
// frequent ones are counted once they ran.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/sql/db.js';
import { call, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

/** Job → [scope, roles]: the loops that used to run on their own timers, and the price table refresh. */
const MOVED: Record<string, ['cluster' | 'instance', string[]]> = {
  'otp.expiry-sweep': ['instance', ['api']],
  'outbound.reconcile': ['cluster', ['workers']],
  'sms.reconcile': ['cluster', ['workers']],
  'sms.receipt-queries': ['instance', ['smpp']],
  'sms.correlation-purge': ['cluster', ['workers']],
  'sms.customer-outbox-purge': ['cluster', ['smpp']],
  'sms.route-switches': ['instance', ['api', 'smpp', 'workers', 'realtime', 'media']],
  'sms.pricing-refresh': ['instance', ['api', 'smpp', 'workers']],
};

t.test(`a started daemon runs its periodic maintenance on the scheduler (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const names = d.daemon.scheduler.names();
  for (const name of Object.keys(MOVED)) t.ok(names.includes(name), `${name} is a scheduler job`);

  const specs = new Map(d.daemon.modules.jobs().map((j) => [j.name, j]));
  for (const [name, [scope, roles]] of Object.entries(MOVED)) {
    if (name === 'outbound.reconcile') continue; // the core's job, not a module's
    t.match(specs.get(name), { scope, roles }, `${name}: ${scope}, in ${roles.join(', ')}`);
  }

  // The one-second and two-second jobs have run by now, or soon: counted by name.
  for (const job of ['otp.expiry-sweep', 'sms.receipt-queries', 'sms.route-switches']) {
    const line = `ferry_job_runs_total{job="${job}",outcome="ok"}`;
    let text = '';
    for (const until = Date.now() + 15_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      text = (await call(d.admin, 'GET', '/metrics')).text;
      if (text.split('\n').some((l) => l.startsWith(line) && Number(l.slice(line.length)) >= 1)) break;
    }
    t.ok(text.split('\n').some((l) => l.startsWith(line) && Number(l.slice(line.length)) >= 1), `${job} ran and was counted in ferry_job_runs_total`);
  }
});

t.test(`a daemon restarted after a crash gives back the cluster leases its earlier life held (${backendLabel})`, async (t) => {
  const first = await startDaemon();
  const { dataDir } = first.reuse.store;
  await first.stopKeepingStore();
  // As a SIGKILL leaves them: sms.reconcile held by the dead life for another hour; another instance's lease beside it.
  const until = Date.now() + 3_600_000;
  writeFileSync(join(dataDir, 'scheduler.holder'), 'crashed-life\n');
  const db = await openDb({ url: first.reuse.store.url, dataDir });
  await db.query(
    `INSERT INTO maintenance_leases (name, holder, until_ms) VALUES ('job:sms.reconcile', 'crashed-life', $1), ('job:sms.correlation-purge', 'other-instance', $1)
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, until_ms = EXCLUDED.until_ms`,
    [until],
  );
  await db.close();
  const d = await startDaemon({}, first.reuse);
  t.teardown(() => d.stop());
  const lease = async (name: string) => (await d.daemon.db.query<{ holder: string; until_ms: string }>(`SELECT holder, until_ms FROM maintenance_leases WHERE name = $1`, [`job:${name}`])).rows[0];
  const mine = await lease('sms.reconcile');
  t.ok(Number(mine.until_ms) === 0 || mine.holder === d.daemon.scheduler.holder, 'the dead life’s lease was given back');
  t.same(await lease('sms.correlation-purge'), { holder: 'other-instance', until_ms: String(until) }, 'another instance’s lease is left alone');
  t.equal(readFileSync(join(dataDir, 'scheduler.holder'), 'utf8').trim(), d.daemon.scheduler.holder, 'the new life is recorded');
});
