// database.readUrl: reads that tolerate replica lag go to a read-only pool on a streaming replica, and to the primary
// while the replica cannot be reached. The config rules and the fallback run everywhere (fake databases); the end to
// end part makes a real streaming replica on loopback with pg_basebackup when DATABASE_URL is set and the Postgres
// server binaries are installed.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { ReadDb, readOnlyUrl } from '../../src/store/sql/read-db.js';
import type { Db, QueryResult, Transaction } from '../../src/store/types.js';
import { accountWithKey, call, LogLines, startDaemon, testEnv, type TestDaemon } from '../helpers/daemon.js';
import { backendLabel, DATABASE_URL } from '../helpers/env.js';
import { until } from '../helpers/wait.js';

t.test('database.readUrl: DATABASE_READ_URL, needs Postgres, redacted in logs, sessions read-only', async (t) => {
  const base = { FERRY_DATA_DIR: t.testdir() };
  const replica = 'postgres://ferry:s3cret@10.0.0.2:5432/ferry';
  t.throws(() => loadConfig({ env: { ...base, DATABASE_READ_URL: replica }, modules: CHANNEL_MODULES }), /database\.readUrl: a read replica needs database\.url/, 'refused with the embedded database');
  const { config } = loadConfig({ env: { ...base, DATABASE_URL: 'postgres://ferry@10.0.0.1/ferry', DATABASE_READ_URL: replica }, modules: CHANNEL_MODULES });
  t.equal(config.database.readUrl, replica);
  t.equal(loadConfig({ env: base, modules: CHANNEL_MODULES }).config.database.readUrl, null, 'unset by default');

  const lines = new LogLines();
  createLogger('info', lines).info({ config }, 'config');
  t.notMatch(JSON.stringify(lines.lines), /s3cret|10\.0\.0\.2/, 'the read URL is redacted like database.url');

  const ro = new URL(readOnlyUrl('postgres://u@h:5432/d?options=-c%20search_path%3Dt_1'));
  t.equal(ro.searchParams.get('options'), '-c search_path=t_1 -c default_transaction_read_only=on', 'given options kept, read-only added');
  t.equal(new URL(readOnlyUrl('postgres://u@h/d')).searchParams.get('options'), '-c default_transaction_read_only=on');
  t.throws(() => readOnlyUrl('host=h dbname=d'), /database\.readUrl is not a URL/);
});

/** A database that records what it was sent; `down` makes every call fail as a refused connection. */
class FakeDb implements Db {
  readonly kind = 'postgres' as const;
  readonly sent: string[] = [];
  down = false;
  closed = false;
  constructor(readonly name: string) {}
  private refuse(): void {
    if (this.down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  }
  async query<T>(text: string): Promise<QueryResult<T>> {
    this.refuse();
    this.sent.push(text);
    if (/missing_table/.test(text)) throw Object.assign(new Error('relation "missing_table" does not exist'), { code: '42P01' });
    return { rows: [{ from: this.name } as T], rowCount: 1 };
  }
  async tx<T>(fn: (q: Transaction) => Promise<T>): Promise<T> {
    this.refuse();
    this.sent.push('BEGIN');
    const out = await fn({ query: (text: string) => this.query(text), commitNow: () => undefined } as Transaction);
    this.sent.push('COMMIT');
    return out;
  }
  async ping(): Promise<void> {
    this.refuse();
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

t.test('ReadDb: the replica while it answers, the primary (read-only) while it does not, tried again after 5 s', async (t) => {
  const primary = new FakeDb('primary');
  const replica = new FakeDb('replica');
  const opened: string[] = [];
  let now = 1_000_000;
  const changes: boolean[] = [];
  const lines = new LogLines();
  const read = new ReadDb({
    url: 'postgres://ferry:pw@replica.example:5432/ferry?options=-c%20search_path%3Ds1',
    primary,
    open: async (url) => {
      opened.push(url);
      await replica.ping();
      return replica;
    },
    log: createLogger('info', lines),
    onChange: (up) => void changes.push(up),
    now: () => now,
  });
  await read.start();
  t.same(changes, [true]);
  t.match(new URL(opened[0]).searchParams.get('options'), '-c search_path=s1 -c default_transaction_read_only=on', 'the pool is opened read-only');
  t.same((await read.query('SELECT 1')).rows, [{ from: 'replica' }]);
  t.same(primary.sent, [], 'nothing on the primary');

  replica.down = true;
  t.same((await read.query('SELECT 2')).rows, [{ from: 'primary' }], 'a refused read is answered by the primary');
  t.same(primary.sent, ['BEGIN', 'SET TRANSACTION READ ONLY', 'SELECT 2', 'COMMIT'], 'read-only on the primary too');
  t.same(changes, [true, false]);
  t.equal(read.replicaUp, false);
  const before = replica.sent.length;
  await read.query('SELECT 3');
  await read.tx(async (q) => q.query('SELECT 4'));
  t.equal(replica.sent.length, before, 'within 5 s the replica is not tried again');
  t.match(primary.sent.slice(-4), ['BEGIN', 'SET TRANSACTION READ ONLY', 'SELECT 4', 'COMMIT']);
  t.equal(lines.find('read replica unreachable: lag-tolerant reads go to the primary').length, 1, 'one warn line per loss');
  await t.rejects(read.ping(), /read replica unreachable/, 'readiness sees it down');

  replica.down = false;
  now += 5001;
  t.same((await read.query('SELECT 5')).rows, [{ from: 'primary' }], 'the read that tries it again is not held up by it');
  await read.probe();
  t.same(changes, [true, false, true]);
  t.same((await read.query('SELECT 6')).rows, [{ from: 'replica' }], 'back on the replica');
  t.equal(lines.find('read replica reachable again: lag-tolerant reads go to it').length, 1);

  await t.rejects(read.query('SELECT * FROM missing_table'), { code: '42P01' }, 'an error of the statement is not a lost replica');
  t.notOk(primary.sent.includes('SELECT * FROM missing_table'));
  t.equal(read.replicaUp, true);

  await read.close();
  t.ok(replica.closed, 'close() closes the replica pool');
  t.notOk(primary.closed, 'and leaves the primary to the daemon');
});

t.test('ReadDb: a replica down at start is not fatal', async (t) => {
  const primary = new FakeDb('primary');
  const changes: boolean[] = [];
  const lines = new LogLines();
  const read = new ReadDb({
    url: 'postgres://u@127.0.0.1:1/d',
    primary,
    open: async () => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    },
    log: createLogger('info', lines),
    onChange: (up) => void changes.push(up),
  });
  await read.start();
  t.same(changes, [false]);
  t.equal(lines.find(/read replica unreachable at start/).length, 1);
  t.same((await read.query('SELECT 1')).rows, [{ from: 'primary' }]);
  await read.close();
});

// ---------------------------------------------------------------------------------------------------------------------
// A real streaming replica on loopback.

const REPLICA_PORT = 16590;
/** A private primary's port, when the local one refuses replication connections. */
const PRIVATE_PRIMARY_PORT = 16589;

/** The newest /usr/lib/postgresql/<version>/bin holding what the test runs, or null. */
function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = join(root, v, 'bin');
    if (['pg_basebackup', 'pg_ctl', 'initdb', 'psql', 'postgres'].every((b) => existsSync(join(bin, b)))) return bin;
  }
  return null;
}

const BIN = postgresBin();
const AS_ROOT = process.getuid?.() === 0;
const skipReplica = !DATABASE_URL
  ? 'read replica: skipped, DATABASE_URL is not set (the replica is made of a Postgres cluster)'
  : !BIN
    ? 'read replica: skipped, pg_basebackup, pg_ctl, initdb or psql not found under /usr/lib/postgresql/<version>/bin (Debian: apt-get install postgresql)'
    : AS_ROOT && !existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser')
      ? 'read replica: skipped, running as root without runuser (pg_ctl refuses root)'
      : false;

/** Runs a Postgres binary, as the postgres OS user when the test runs as root (the server refuses root). */
function pgRun(bin: string, args: string[], timeoutMs = 120_000): string {
  const [cmd, argv] = AS_ROOT ? ['runuser', ['-u', 'postgres', '--', join(BIN!, bin), ...args]] : [join(BIN!, bin), args];
  return execFileSync(cmd, argv, { encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] });
}

function ownedByPostgres(path: string): void {
  if (!AS_ROOT) return;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(path, uid, gid);
}

/** Whether the server at host:port takes a physical replication connection from this user (pg_hba `replication`). */
function replicationRefusal(host: string, port: number, user: string): string | null {
  try {
    pgRun('psql', [`host=${host} port=${port} user=${user} dbname=postgres replication=true`, '-Atc', 'IDENTIFY_SYSTEM'], 10_000);
    return null;
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n')[0];
  }
}

async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

function withHostPort(url: string, host: string, port: number): string {
  const u = new URL(url);
  u.hostname = host;
  u.port = String(port);
  return u.toString();
}

t.test(`a streaming replica serves the lag-tolerant reads; writes stay on the primary; a lost replica falls back (${backendLabel})`, { skip: skipReplica }, async (t) => {
  const dir = mkdtempSync('/tmp/ferry-replica-');
  ownedByPostgres(dir);
  const replicaDir = join(dir, 'replica');
  const primaryDir = join(dir, 'primary');
  const stopCluster = (data: string) => {
    if (existsSync(join(data, 'postmaster.pid'))) {
      try {
        pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop'], 60_000);
      } catch {
        // Already stopped.
      }
    }
  };
  // Undone last first: the daemon stops before its databases, the clusters before their folder goes.
  const undo: Array<() => unknown> = [];
  t.teardown(async () => {
    for (const step of undo.reverse()) await step();
  });
  undo.push(() => rmSync(dir, { recursive: true, force: true }));
  undo.push(() => stopCluster(primaryDir));
  undo.push(() => stopCluster(replicaDir));

  const local = new URL(DATABASE_URL!);
  const localHost = local.hostname || '127.0.0.1';
  const localPort = Number(local.port || 5432);
  const localUser = decodeURIComponent(local.username || 'postgres');
  const refusal = replicationRefusal(localHost, localPort, localUser);
  const { env, store } = await testEnv();
  let primaryUrl: string;
  let source: { host: string; port: number; user: string };
  if (!refusal) {
    // The local Postgres itself: the test's schema replicates with the rest of the cluster.
    primaryUrl = store.url!;
    source = { host: localHost, port: localPort, user: localUser };
    t.comment(`replica of the local Postgres at ${localHost}:${localPort}`);
  } else {
    // The local server takes no replication connection (its pg_hba.conf has no `replication` line for this address):
    // a private primary on loopback stands in; the system configuration is left as it is.
    t.comment(`the local Postgres refuses replication (${refusal}); the replica is made of a private primary on 127.0.0.1:${PRIVATE_PRIMARY_PORT}`);
    pgRun('initdb', ['-D', primaryDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '--no-instructions'], 120_000);
    pgRun('pg_ctl', [
      '-D', primaryDir, '-l', join(dir, 'primary.log'), '-w', '-t', '60',
      '-o', `-p ${PRIVATE_PRIMARY_PORT} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c wal_level=replica -c max_wal_senders=4 -c fsync=off`,
      'start',
    ]);
    primaryUrl = `postgres://postgres@127.0.0.1:${PRIVATE_PRIMARY_PORT}/postgres`;
    source = { host: '127.0.0.1', port: PRIVATE_PRIMARY_PORT, user: 'postgres' };
  }
  const settings = (await sql<{ name: string; setting: string }>(primaryUrl, `SELECT name, setting FROM pg_settings WHERE name IN ('wal_level', 'max_wal_senders')`)).map((r) => `${r.name}=${r.setting}`);
  t.comment(`primary: ${settings.join(', ')}`);

  // The base backup (whole cluster, WAL streamed alongside), then the standby on its own port, read-only (hot standby).
  pgRun('pg_basebackup', ['-h', source.host, '-p', String(source.port), '-U', source.user, '-D', replicaDir, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync'], 600_000);
  // A Debian cluster keeps its configuration in /etc, outside the data folder: the standby gets a minimal one.
  for (const [file, text] of [
    ['postgresql.conf', ''],
    ['pg_hba.conf', 'local all all trust\nhost all all 127.0.0.1/32 trust\n'],
    ['pg_ident.conf', ''],
  ] as const) {
    const path = join(replicaDir, file);
    if (!existsSync(path)) {
      writeFileSync(path, text);
      ownedByPostgres(path);
    }
  }
  pgRun('pg_ctl', [
    '-D', replicaDir, '-l', join(dir, 'replica.log'), '-w', '-t', '120',
    '-o', `-p ${REPLICA_PORT} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c hot_standby=on -c fsync=off`,
    'start',
  ]);
  const replicaUrl = withHostPort(primaryUrl, '127.0.0.1', REPLICA_PORT);
  const replicaAdmin = `postgres://postgres@127.0.0.1:${REPLICA_PORT}/postgres`;
  await until(
    () => sql<{ r: boolean }>(replicaAdmin, 'SELECT pg_is_in_recovery() AS r').then((rows) => rows[0].r, () => false),
    (r) => r,
    60_000,
  );
  t.pass('the replica accepts connections and is in recovery');

  /** Resolves once the replica replayed everything the primary wrote so far. */
  const caughtUp = async () => {
    const [{ lsn }] = await sql<{ lsn: string }>(primaryUrl, 'SELECT pg_current_wal_lsn()::text AS lsn');
    await until(() => sql<{ ok: boolean }>(replicaAdmin, 'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]).then((r) => r[0].ok), (ok) => ok, 30_000);
  };

  const d: TestDaemon = await startDaemon({}, { env: { ...env, DATABASE_URL: primaryUrl, DATABASE_READ_URL: replicaUrl }, store });
  undo.push(() => d.stop());
  const { token } = await accountWithKey(d, `replica${process.pid}`);
  const api = (method: string, path: string, body?: unknown) => call(d.api, method, path, { token, body });
  const gauge = async () => /ferry_backend_up\{backend="database-read"\} (\d)/.exec((await call(d.admin, 'GET', '/metrics')).text)?.[1];
  t.equal(await gauge(), '1', 'ferry_backend_up{backend="database-read"} 1');
  await caughtUp();

  t.test('(a) a lag-tolerant read is served by the replica: paused replay hides a write the primary shows', async (t) => {
    await sql(replicaAdmin, 'SELECT pg_wal_replay_pause()');
    t.teardown(() => sql(replicaAdmin, 'SELECT pg_wal_replay_resume()').catch(() => undefined));
    await until(() => sql<{ s: string }>(replicaAdmin, 'SELECT pg_get_wal_replay_pause_state() AS s').then((r) => r[0].s), (s) => s === 'paused');

    // Writes through the API, on the primary while the replica stands still.
    const link = await api('POST', '/v1/shortlink/links', { url: 'https://example.com/replica' });
    t.equal(link.status, 201, link.text);
    const { id, slug } = link.json.data;
    t.equal((await api('GET', `/v1/shortlink/links/${id}`)).status, 200, 'the link itself is read on the primary');
    const redirect = d.daemon.modules.service<{ redirectAddress: string }>('shortlink').redirectAddress;
    t.equal((await fetch(`${redirect}/${slug}`, { redirect: 'manual' })).status, 302);
    await until(() => sql<{ n: number }>(primaryUrl, 'SELECT count(*)::int AS n FROM shortlink_clicks WHERE link_id = $1', [id]).then((r) => r[0].n), (n) => n === 1);
    await until(() => sql<{ n: number }>(primaryUrl, 'SELECT count(*)::int AS n FROM request_logs WHERE request_id = $1', [link.json.requestId]).then((r) => r[0].n), (n) => n === 1);
    t.pass('the click and the request log row are on the primary');

    const clicks = await api('GET', `/v1/shortlink/links/${id}/clicks`);
    t.equal(clicks.status, 200, clicks.text);
    t.same(clicks.json.data.clicks, [], 'the raw clicks come from the replica: not there yet');
    t.equal((await api('GET', `/v1/logs/${link.json.requestId}`)).json.code, 'LOG_NOT_FOUND', 'the request log comes from the replica: not there yet');
    t.same((await api('GET', `/v1/logs?requestId=${link.json.requestId}`)).json.data.items, []);

    // A message sent now is not on the replica: its status is read on the primary, so the sender finds it.
    const sent = await api('POST', '/v1/sms/send', { to: '+233241234567', from: 'Ferry', message: 'replica' });
    t.equal(sent.status, 200, sent.text);
    const status = await api('GET', `/v1/sms/status/${sent.json.data.messageId}`);
    t.equal(status.status, 200, 'a status read right after the send finds the message (the primary answers)');
    t.equal(status.json.data.messageId, sent.json.data.messageId);

    await sql(replicaAdmin, 'SELECT pg_wal_replay_resume()');
    const seen = await until(() => api('GET', `/v1/shortlink/links/${id}/clicks`), (r) => r.json?.data?.clicks?.length === 1, 30_000);
    t.equal(seen.json.data.clicks[0].outcome, 'redirected', 'replay resumed: the click appears');
    const log = await until(() => api('GET', `/v1/logs/${link.json.requestId}`), (r) => r.json?.code === 'LOG_FOUND', 30_000);
    t.equal(log.json.data.route, '/v1/shortlink/links');
  });

  t.test('(b) writes stay on the primary; the read pool cannot write', async (t) => {
    await t.rejects(d.daemon.readDb.query(`CREATE TABLE replica_probe (x int)`), { code: '25006' }, 'the read pool refuses a write (read-only)');
    await t.rejects(sql(replicaUrl, `CREATE TABLE replica_probe (x int)`), { code: '25006' }, 'the replica itself is read-only');
    const before = await api('GET', '/v1/shortlink/links?limit=100');
    const made = await api('POST', '/v1/shortlink/links', { url: 'https://example.com/written' });
    t.equal(made.status, 201, made.text);
    const [{ n }] = await sql<{ n: number }>(primaryUrl, 'SELECT count(*)::int AS n FROM shortlink_links WHERE id = $1', [made.json.data.id]);
    t.equal(n, 1, 'the write is on the primary');
    t.equal((await api('GET', '/v1/shortlink/links?limit=100')).json.data.links.length, before.json.data.links.length + 1);
  });

  t.test('(c) the replica stopped: the lag-tolerant endpoints still answer (the primary), the gauge says down', async (t) => {
    const link = (await api('POST', '/v1/shortlink/links', { url: 'https://example.com/after' })).json.data;
    pgRun('pg_ctl', ['-D', replicaDir, '-m', 'fast', '-w', '-t', '60', 'stop'], 90_000);
    const clicks = await api('GET', `/v1/shortlink/links/${link.id}/clicks`);
    t.equal(clicks.status, 200, clicks.text);
    t.same(clicks.json.data.clicks, []);
    const analytics = await api('GET', '/v1/shortlink/analytics?groupBy=time&includeBots=true');
    t.equal(analytics.status, 200, analytics.text);
    t.ok(analytics.json.data.total >= 1, 'the earlier click is counted (read on the primary)');
    const logs = await api('GET', '/v1/logs?limit=5');
    t.equal(logs.status, 200, logs.text);
    t.ok(logs.json.data.items.length > 0);
    const sent = await api('POST', '/v1/sms/send', { to: '+233241234567', from: 'Ferry', message: 'no replica' });
    t.equal((await api('GET', `/v1/sms/status/${sent.json.data.messageId}`)).status, 200);
    t.equal(await gauge(), '0', 'ferry_backend_up{backend="database-read"} 0');
    const ready = await call(d.admin, 'GET', '/readyz');
    t.equal(ready.status, 200, 'a lost replica does not make the instance unready');
    t.ok(ready.json.warnings.some((w: string) => /read replica is unreachable/.test(w)), 'and lists it among its warnings');
    await t.rejects(d.daemon.readDb.query(`CREATE TABLE replica_probe (x int)`), { code: '25006' }, 'on the primary the read pool is read-only too');
  });
});
