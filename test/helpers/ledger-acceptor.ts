/**
 * Child process of test/ledger/crash.test.ts: CALLERS concurrent callers accept rows through one LedgerWriter in a
 * loop and print "ok <id>" as each accept resolves (= acknowledged to a customer), until the parent SIGKILLs it.
 * Env: ACCEPTOR_DB_URL or ACCEPTOR_DATA_DIR, ACCEPTOR_CALLERS, ACCEPTOR_MAX_ROWS, ACCEPTOR_MAX_MS.
 */
import { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import { openDb } from '../../src/store/sql/db.js';
import { sampleMessage } from './ledger-rows.js';

const env = process.env;
const callers = Number(env.ACCEPTOR_CALLERS ?? 32);
const maxRows = Number(env.ACCEPTOR_MAX_ROWS ?? 200_000);
const deadline = Date.now() + Number(env.ACCEPTOR_MAX_MS ?? 30_000);

const db = await openDb({ url: env.ACCEPTOR_DB_URL || null, dataDir: env.ACCEPTOR_DATA_DIR ?? '', poolSize: 3 });
const writer = new LedgerWriter(db);
process.stdout.write('ready\n');

let issued = 0;
async function caller(): Promise<void> {
  while (issued < maxRows && Date.now() < deadline) {
    issued++;
    const row = sampleMessage({ accountId: 'acc_crash' });
    await writer.accept(row);
    process.stdout.write(`ok ${row.id}\n`);
  }
}
await Promise.all(Array.from({ length: callers }, caller));
process.stdout.write('done\n');
await writer.close();
await db.close();
