/**
 * Ledger acceptance benchmark: N concurrent callers each awaiting `LedgerWriter.accept` in a loop, on Postgres when
 * DATABASE_URL is set, else embedded PGlite in a scratch folder. Prints accepted rows/s and rows per commit.
 * Bounded: stops at --rows or --seconds, whichever comes first. Tables are created in a scratch schema/folder.
 *
 *   npx tsx scripts/bench/ledger.ts [--callers 500] [--rows 50000] [--seconds 10] [--linger 1] [--max-batch 500]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import type { NewMessage } from '../../src/ledger/types.js';
import { openDb } from '../../src/store/sql/db.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { newId } from '../../src/util/ids.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const CALLERS = arg('callers', 500);
const MAX_ROWS = arg('rows', 50_000);
const SECONDS = arg('seconds', 10);
const LINGER = arg('linger', 1);
const MAX_BATCH = arg('max-batch', 500);

const baseUrl = process.env.DATABASE_URL || null;
const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-ledger-'));
const schema = 'bench_' + randomBytes(4).toString('hex');
async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: baseUrl! });
  await c.connect();
  await c.query(sql).finally(() => c.end());
}
let url: string | null = null;
if (baseUrl) {
  await admin(`CREATE SCHEMA ${schema}`);
  const u = new URL(baseUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  url = u.toString();
}
const db = await openDb({ url, dataDir, poolSize: 4 });
await migrate(db);
const writer = new LedgerWriter(db, { lingerMs: LINGER, maxBatch: MAX_BATCH });

function row(): NewMessage {
  return {
    id: newId('msg_'),
    accountId: 'acc_bench',
    ingress: 'smpp',
    source: 'Ferry',
    destination: '447700900123',
    body: 'Your verification code is 482913. It expires in 10 minutes.',
    segments: 1,
    encoding: 'gsm7',
    registeredDelivery: 1,
    costMicros: 35_000,
    currency: 'EUR',
    customerSystemId: 'esme1',
  };
}

let issued = 0;
let accepted = 0;
const start = performance.now();
const stopAt = start + SECONDS * 1000;
async function caller(): Promise<void> {
  while (issued < MAX_ROWS && performance.now() < stopAt) {
    issued++;
    await writer.accept(row());
    accepted++;
  }
}
try {
  await Promise.all(Array.from({ length: CALLERS }, caller));
  const secs = (performance.now() - start) / 1000;
  const s = writer.stats;
  console.log(
    `ledger accept on ${db.kind}: ${accepted} rows in ${secs.toFixed(2)} s = ${Math.round(accepted / secs)} rows/s ` +
      `with ${CALLERS} callers; ${s.committedBatches} commits, ${(s.items / Math.max(1, s.committedBatches)).toFixed(1)} rows/commit, largest ${s.maxBatchSeen}`,
  );
} finally {
  await writer.close();
  await db.close();
  if (baseUrl) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  rmSync(dataDir, { recursive: true, force: true });
}
