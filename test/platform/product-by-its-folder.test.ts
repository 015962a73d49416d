// Issue 43, "Done when": a product that uses every declaration is added by its folder and one line in
// src/channels/index.ts. In a temporary git worktree of HEAD, the testkit fixture (test/platform/fixtures/testkit-product)
// is copied into src/channels/testkit/ and src/sim/testkit/, one line is added to the module list and committed; then
// the CI footprint check finds nothing outside, the product type-checks, and one daemon booted from that worktree serves
// every part of it (listener, REST and admin routes, event, job, pub/sub, credentials, guard, CLI, simulator, migration,
// OpenAPI catalogues).
import t from 'tap';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { join } from 'node:path';
import { awaitStarted, call, testEnv } from '../helpers/daemon.js';
import { backendLabel, DATABASE_URL } from '../helpers/env.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { openDb } from '../../src/store/sql/db.js';
import { packageRoot } from '../../src/util/paths.js';

// Several `tsx` processes (the footprint check, tsc, the daemon, two CLI calls) on a loaded 2-core machine.
t.setTimeout(420_000);

const FIXTURE = join(packageRoot, 'test/platform/fixtures/testkit-product');
const ONE_LINE = "  (await import('./testkit/index.js')).testkitModule,";

function hasGit(): boolean {
  try {
    execFileSync('git', ['--version'], { stdio: 'ignore' });
    return existsSync(join(packageRoot, '.git'));
  } catch {
    return false;
  }
}

/** Runs a command to completion in the worktree (bounded); never throws. */
function run(cwd: string, cmd: string, args: string[], env: Record<string, string> = {}, timeoutMs = 180_000) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `ferry <args>` from the worktree's sources. */
function ferryIn(wt: string, args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', join(wt, 'src/cli/index.ts'), ...args], { cwd: wt, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A database `ferry_testkit_<random>` on the server DATABASE_URL names, and how to drop it (sessions ended). */
async function freshDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = 'ferry_testkit_' + randomBytes(5).toString('hex');
  const sql = async (text: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(text);
    } finally {
      await c.end();
    }
  };
  await sql(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = '/' + name;
  return { url: url.toString(), drop: () => sql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

if (!hasGit()) {
  console.log('# SKIP product-by-its-folder: git (or the repository’s .git) is missing, no worktree can be made');
  t.pass('skipped: no git');
} else {
  t.test(`the testkit product, added by its folder and one line (${backendLabel})`, async (t) => {
    const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
    const tmp = mkdtempSync(join(tmpdir(), 'ferry-testkit-'));
    const wt = join(tmp, 'wt');
    git(packageRoot, 'worktree', 'add', '--detach', '--quiet', wt, 'HEAD');
    t.teardown(() => {
      try {
        git(packageRoot, 'worktree', 'remove', '--force', wt);
      } catch {
        /* removed below with the folder; prune forgets it */
      }
      rmSync(tmp, { recursive: true, force: true });
      git(packageRoot, 'worktree', 'prune');
    });
    symlinkSync(realpathSync(join(packageRoot, 'node_modules')), join(wt, 'node_modules'));

    // The product: its folder (src/channels/testkit, its simulator in src/sim/testkit) and one line in the list.
    cpSync(FIXTURE, join(wt, 'src/channels/testkit'), { recursive: true, filter: (src) => !src.startsWith(join(FIXTURE, 'sim')) });
    cpSync(join(FIXTURE, 'sim'), join(wt, 'src/sim/testkit'), { recursive: true });
    const indexPath = join(wt, 'src/channels/index.ts');
    const index = readFileSync(indexPath, 'utf8');
    const end = index.indexOf('] as readonly ChannelModule[];');
    t.ok(end > 0, 'src/channels/index.ts ends its list as expected');
    writeFileSync(indexPath, index.slice(0, end) + ONE_LINE + '\n' + index.slice(end));
    const base = git(wt, 'rev-parse', 'HEAD');
    git(wt, 'add', '-A');
    git(wt, '-c', 'user.name=testkit', '-c', 'user.email=testkit@example.invalid', 'commit', '--quiet', '--no-verify', '-m', 'testkit: the conformance product');
    t.equal(git(wt, 'diff', '--numstat', base, 'HEAD', '--', 'src/channels/index.ts'), '1\t0\tsrc/channels/index.ts', 'one added line in src/channels/index.ts, nothing removed');
    t.same(
      git(wt, 'diff', '--name-only', base, 'HEAD').split('\n').filter((f) => !f.startsWith('src/channels/testkit/') && !f.startsWith('src/sim/testkit/')),
      ['src/channels/index.ts'],
      'nothing else outside its folders',
    );

    // (a) The CI footprint check.
    const tsx = join(wt, 'node_modules/.bin/tsx');
    const fp = await run(wt, tsx, ['scripts/ci/product-footprint.ts', '--product', 'testkit', '--since', base]);
    t.equal(fp.code, 0, `footprint exits 0\n${fp.stdout}${fp.stderr}`);
    t.match(fp.stdout, /testkit, 1 commit\(s\)/);
    t.match(fp.stdout, /only its folder and its line in src\/channels\/index\.ts/);
    t.notMatch(fp.stdout, /outside its folder|beyond its one line/);

    // (b) The product type-checks with the sources (src/ only: the tests and scripts are the root tsconfig's, in CI).
    writeFileSync(join(wt, 'tsconfig.testkit.json'), JSON.stringify({ extends: './tsconfig.json', include: ['src'], exclude: [] }));
    const tsc = await run(wt, process.execPath, [join(wt, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.testkit.json']);
    t.equal(tsc.code, 0, `tsc passes on the product\n${tsc.stdout}${tsc.stderr}`);

    // (c) One daemon from the worktree; on Postgres in a database of its own, made and dropped here.
    const database = DATABASE_URL ? await freshDatabase(DATABASE_URL) : null;
    if (database) t.teardown(() => database.drop());
    const { env: baseEnv, store } = await testEnv(database ? { DATABASE_URL: database.url } : {});
    t.teardown(() => store.cleanup());
    const receiver = await WebhookReceiver.start();
    t.teardown(() => receiver.close());
    const env = {
      ...baseEnv,
      FERRY_TESTKIT_PORT: '0',
      FERRY_TESTKIT_JOB_EVERY_MS: '200',
      // The loopback webhook receiver is a private target; link-local addresses stay refused even so.
      FERRY_SECURITY_ALLOW_PRIVATE_TARGETS: 'true',
    };
    const p = await awaitStarted(ferryIn(wt, ['start'], { ...env, FERRY_LOG_LEVEL: 'info' }), 90_000);
    t.teardown(() => p.child.kill('SIGKILL'));
    const started = JSON.parse(p.output.find((l) => l.includes('"ferry started"'))!);
    const udpAddress: string = started.listeners?.testkit;
    t.match(udpAddress, /^127\.0\.0\.1:\d+$/, '`ferry started` names the testkit listener');
    t.ok(started.jobs.includes('testkit.count'), '`ferry started` names its job');
    const adminToken = readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim();
    const admin = async (method: string, path: string, body?: unknown) => call(p.admin, method, path, { body, headers: { authorization: `Bearer ${adminToken}` } });

    const ready = (await admin('GET', '/readyz')).json;
    t.ok(ready.listeners.some((l: any) => l.module === 'testkit' && l.name === 'testkit' && l.kind === 'udp' && l.address === udpAddress), '/readyz lists the testkit listener with its address');

    // The UDP listener answers.
    const [host, port] = [udpAddress.split(':')[0], Number(udpAddress.split(':')[1])];
    const udp = createSocket('udp4');
    t.teardown(() => udp.close());
    const answer = new Promise<string>((resolve) => udp.once('message', (m) => resolve(m.toString())));
    udp.send('ping', port, host);
    t.equal(await Promise.race([answer, new Promise<string>((r) => setTimeout(() => r('no answer'), 5000))]), 'testkit:ping', 'the listener answers a datagram');

    // An account, a key with the testkit's scopes, and a webhook endpoint for its event.
    t.equal((await admin('POST', '/admin/accounts', { name: 'acme' })).status, 201);
    const key = (await admin('POST', '/admin/keys', { account: 'acme', scopes: ['testkit:write', 'testkit:read', 'webhooks:manage'] })).json.data;
    const token: string = key.token;
    const readOnly = (await admin('POST', '/admin/keys', { account: 'acme', scopes: ['testkit:read'] })).json.data.token as string;
    const hook = await call(p.api, 'POST', '/v1/webhooks', { token, body: { url: receiver.url, events: ['testkit.noted'] } });
    t.ok(hook.json?.success, hook.text);

    // Its REST routes, its scopes and its error code.
    t.equal((await call(p.api, 'POST', '/v1/testkit/notes', { token: readOnly, body: { text: 'no' } })).status, 403, 'testkit:write is required');
    const noted = await call(p.api, 'POST', '/v1/testkit/notes', { token, body: { text: 'hello' } });
    t.equal(noted.status, 201, noted.text);
    const noteId: string = noted.json.data.id;
    t.equal((await call(p.api, 'GET', `/v1/testkit/notes/${noteId}`, { token: readOnly })).json.data.text, 'hello', 'testkit:read reads it');
    const missing = await call(p.api, 'GET', '/v1/testkit/notes/tkn_nope', { token });
    t.equal(missing.status, 404);
    t.equal(missing.json.code, 'TESTKIT_NOTE_NOT_FOUND', 'its error code, with the status it declared');

    // The event written with the note reaches the subscribed endpoint.
    const delivered = await until('the testkit.noted delivery', async () => receiver.received.find((r) => r.json?.type === 'testkit.noted'));
    t.equal(delivered.json.data.id, noteId, 'testkit.noted delivered with the note');

    // ctx.http: a URL the customer gives is fetched through the guard; a link-local address is refused.
    const fetched = await call(p.api, 'POST', '/v1/testkit/fetch', { token, body: { url: receiver.url } });
    t.equal(fetched.status, 200, fetched.text);
    t.equal(fetched.json.data.status, 200);
    const refused = await call(p.api, 'POST', '/v1/testkit/fetch', { token, body: { url: 'http://169.254.169.254/latest/meta-data' } });
    t.equal(refused.status, 422);
    t.equal(refused.json.code, 'TESTKIT_TARGET_REFUSED', 'the guard refuses the cloud metadata address');

    // ctx.credentials: a secret stored through its admin route, read back as its fingerprint only.
    const stored = await admin('PUT', '/admin/testkit/credentials/acme', { secret: 'tk-secret-value-42' });
    t.equal(stored.status, 200, stored.text);
    t.match(stored.json.data.fingerprint, /^hmac-sha256:/);
    const listed = await admin('GET', '/admin/testkit/credentials/acme');
    t.same(listed.json.data, [{ name: 'secret', version: 1, fingerprint: stored.json.data.fingerprint }]);
    const core = await admin('GET', '/admin/credentials?account=acme&module=testkit');
    t.equal(core.status, 200, core.text);
    for (const text of [stored.text, listed.text, core.text]) t.notMatch(text, /tk-secret-value-42/, 'never the value');
    t.match(core.text, stored.json.data.fingerprint, 'the core credential listing shows it');

    const cli = { ...env, FERRY_ADMIN_URL: p.admin };
    // ctx.pubsub (heard its own publish) and the cluster job (counted the note), through `ferry testkit stats`.
    const stats = await until('the job and pub/sub counters', async () => {
      const r = await run(wt, process.execPath, ['--import', 'tsx', join(wt, 'src/cli/index.ts'), 'testkit', 'stats', '--json'], cli, 60_000);
      if (r.code !== 0) throw new Error(`ferry testkit stats: ${r.code}\n${r.stderr}`);
      const s = JSON.parse(r.stdout);
      return s.counted >= 1 && s.heard >= 1 ? s : null;
    }, 60_000);
    t.equal(stats.notes, 1, '`ferry testkit stats` reads its admin route');
    t.ok(stats.jobRuns >= 1 && stats.counted === 1, 'the cluster job ran and counted the note');
    t.equal(stats.heard, 1, 'ctx.pubsub delivered the publish');
    t.equal(stats.datagrams, 1);

    // `ferry sim testkit`: the simulator, a TCP echo peer on loopback.
    const sim = ferryIn(wt, ['sim', 'testkit', '--port', '0'], cli);
    t.teardown(() => sim.kill('SIGKILL'));
    const simExit = new Promise<number | null>((resolve) => sim.on('exit', (code) => resolve(code)));
    const listening = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('ferry sim testkit did not start: ' + out)), 60_000);
      sim.stdout!.on('data', (d) => {
        out += d;
        const line = out.split('\n').find((l) => l.includes('"listening"'));
        if (line) {
          clearTimeout(timer);
          resolve(JSON.parse(line).listening);
        }
      });
    });
    const echoed = await new Promise<string>((resolve, reject) => {
      const [h, pt] = listening.split(':');
      const s = connect(Number(pt), h, () => s.write('hello over tcp'));
      s.on('data', (d) => {
        resolve(d.toString());
        s.destroy();
      });
      s.on('error', reject);
    });
    t.equal(echoed, 'hello over tcp', '`ferry sim testkit` echoes');
    sim.kill('SIGTERM');
    t.equal(await simExit, 0, 'the simulator stops on SIGTERM');

    // The OpenAPI document: its paths, its error code in the catalogue, its scopes in the scope table.
    const doc = (await call(p.api, 'GET', '/v1/openapi.json')).json;
    t.ok(doc.paths['/testkit/notes'], 'its paths are in the document');
    t.ok(doc.tags.some((tag: any) => tag.name === 'testkit' && tag['x-maturity'] === 'alpha'), 'its tag');
    t.match(doc.info.description, /\| TESTKIT_TARGET_REFUSED \| 422 \|/, 'its error code in the catalogue');
    t.match(doc.info.description, /\| `testkit:write` \|/, 'its scopes in the scope table');
    t.match(doc.info.description, /\| `testkit:read` \|/);

    p.child.kill('SIGTERM');
    t.equal((await p.exited).code, 0, 'a clean stop');

    // Storage, read after the stop: migration 0900 applied; the event row written with the note.
    const db = await openDb({ url: database?.url ?? null, dataDir: store.dataDir });
    try {
      const m = await db.query<{ name: string }>('SELECT name FROM schema_migrations WHERE version = 900');
      t.same(m.rows.map((r) => r.name), ['testkit_notes'], 'migration 0900 is applied');
      const ev = await db.query<{ payload: any }>(`SELECT payload FROM webhook_events WHERE type = 'testkit.noted'`);
      t.equal(ev.rows.length, 1, 'the event is in webhook_events');
    } finally {
      await db.close();
    }
  });
}
