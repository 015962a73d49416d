/**
 * npm run bench -- messenger [--seconds S] [--concurrency C]
 *
 * A daemon in this process (its embedded backends unless DATABASE_URL / REDIS_URL are set) with the embedded
 * messenger simulator answering at once; C clients send template messages as fast as they are answered for S seconds
 * (bounded), so the offered rate is well above the spec's 80/s. Reports sends/s accepted, the refusals (WA005), the
 * accepted count in each whole second of the run as the server counted it (the 80/s limit held: the worst second and
 * the mean against 80), and accepted → read latency (the simulator's statuses coming back through the signed webhook).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { Daemon } from '../../src/daemon.js';
import { createLogger } from '../../src/log.js';

const args = process.argv.slice(2);
const opt = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const seconds = Math.min(120, opt('seconds', 12));
const concurrency = Math.min(256, opt('concurrency', 32));

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-messenger-'));
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_LOG_LEVEL: 'silent',
  FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '0',
  ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, FERRY_REDIS_KEY_PREFIX: `bench-messenger-${process.pid}:` } : {}),
};
const daemon = await Daemon.start(loadConfig({ env, modules: CHANNEL_MODULES }).config, createLogger('silent'));
try {
  const adminToken = (await import('node:fs')).readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const admin = async (path: string, body: unknown) => {
    const r = await fetch(daemon.addresses.admin + path, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return ((await r.json()) as { data: any }).data;
  };
  const name = `bench${process.pid}`;
  const accountId = (await admin('/admin/accounts', { name })).id as string;
  const key = await admin('/admin/keys', { account: name, scopes: 'all' });
  const auth = `Basic ${key.token}`;
  let accepted = 0;
  let limited = 0;
  let other = 0;
  let seq = 0;
  const startedAt = Date.now();
  const started = performance.now();
  const until = started + seconds * 1000;
  const client = async () => {
    while (performance.now() < until) {
      const to = `4479${String(process.pid % 1000).padStart(3, '0')}${String(++seq).padStart(6, '0')}`;
      const r = await fetch(`${daemon.addresses.http}/v1/messenger/send`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ to, type: 'template', template: { name: 'hello_world', language: 'en_US' } }),
      });
      await r.arrayBuffer();
      if (r.status === 200) accepted++;
      else if (r.status === 429) limited++;
      else other++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const elapsed = (performance.now() - started) / 1000;
  // The limit's fixed seconds the run touched: at most 80 takes in each (the exact bound the windows promise).
  const secondsTouched = Math.floor(Date.now() / 1000) - Math.floor(startedAt / 1000) + 1;
  // Wait (bounded) for the statuses of what was accepted to come back.
  const drainUntil = Date.now() + 60_000;
  for (;;) {
    const { rows } = await daemon.db.query<{ n: string }>(`SELECT count(*) AS n FROM messenger_messages WHERE account_id = $1 AND status NOT IN ('read', 'failed')`, [accountId]);
    if (Number(rows[0].n) === 0 || Date.now() > drainUntil) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const { rows: perSecond } = await daemon.db.query<{ s: string; n: string }>(
    `SELECT floor(created_at / 1000) AS s, count(*) AS n FROM messenger_messages WHERE account_id = $1 GROUP BY 1 ORDER BY 1`,
    [accountId],
  );
  const whole = perSecond.slice(1, -1).map((r) => Number(r.n)); // the first and last seconds are partial
  const worst = Math.max(...whole);
  const mean = whole.reduce((a, b) => a + b, 0) / Math.max(1, whole.length);
  const { rows: lat } = await daemon.db.query<{ ms: string }>(
    `SELECT (h.at - j.created_at) AS ms FROM outbound_history h JOIN outbound_jobs j ON j.id = h.job_id WHERE j.product = 'messenger' AND j.account_id = $1 AND h.kind = 'state' AND h.state = 'read' ORDER BY 1`,
    [accountId],
  );
  const ms = lat.map((r) => Number(r.ms));
  const pct = (p: number) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))] : NaN);
  const { rows: states } = await daemon.db.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM messenger_messages WHERE account_id = $1 GROUP BY 1 ORDER BY 1`, [accountId]);
  const out = {
    backend: `${daemon.db.kind}+${process.env.REDIS_URL ? 'redis' : 'local'}`,
    seconds: Number(elapsed.toFixed(1)),
    concurrency,
    requests: accepted + limited + other,
    acceptedPerSecond: Number((accepted / elapsed).toFixed(1)),
    accepted,
    limitedWA005: limited,
    otherAnswers: other,
    wholeSeconds: whole.length,
    worstSecond: worst,
    meanPerWholeSecond: Number(mean.toFixed(2)),
    secondsTouched,
    limitHeld:
      accepted <= 80 * secondsTouched
        ? `yes: ${accepted} accepted ≤ 80 × ${secondsTouched} fixed seconds = ${80 * secondsTouched} (${((accepted / (80 * secondsTouched)) * 100).toFixed(1)}% of the allowance)`
        : `NO: ${accepted} accepted > ${80 * secondsTouched}`,
    note: 'worstSecond / meanPerWholeSecond count rows by their insert time, which lags the rate take by the request\'s work, so a second may show a few of the next',
    acceptedToReadMs: { p50: pct(50), p95: pct(95), p99: pct(99), max: ms.at(-1) ?? NaN, n: ms.length },
    finalStates: Object.fromEntries(states.map((r) => [r.status, Number(r.n)])),
  };
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
} finally {
  await daemon.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
