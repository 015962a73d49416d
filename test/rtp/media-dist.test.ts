// The media engine as production runs it: compiled dist/, plain node (no TypeScript hook), the worker loaded
// from dist/rtp/media-worker.js. Source runs are media-engine.test.ts.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { distIsFresh } from '../helpers/fresh-build.js';

const root = join(import.meta.dirname, '..', '..');
const entry = pathToFileURL(join(root, 'dist', 'rtp', 'index.js')).href;

const script = `
import { MediaEngine, generateTone, dominantFrequency } from ${JSON.stringify(entry)};
const engine = await MediaEngine.start({ portRange: { min: 41400, max: 41499 } });
const a = await engine.open({ codec: 'PCMA', record: { maxSeconds: 2 } });
const b = await engine.open({ codec: 'PCMA', remote: { host: '127.0.0.1', port: a.localPort } });
const digits = [];
a.on('digit', (d) => digits.push(d));
const done = b.played();
b.play(generateTone([440], 400));
await done;
b.sendDigits('9');
for (let i = 0; i < 100 && digits.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
await new Promise((r) => setTimeout(r, 200));
const ra = await a.stop();
const rb = await b.stop();
await engine.close();
console.log(JSON.stringify({ received: ra.stats.packetsReceived, sent: rb.stats.packetsSent, lost: ra.stats.lost, digits, freq: dominantFrequency(ra.recording), recorded: ra.recording.length }));
`;

t.test('dist/rtp works from plain node, its worker from dist', { skip: distIsFresh() ? false : 'dist/ is not built from the current source (tap\'s before step builds it)' }, async (t) => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(killer);
  t.equal(code, 0, err);
  const result = JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
  t.same(result, { received: 27, sent: 27, lost: 0, digits: ['9'], freq: 440, recorded: 3200 }, '20 frames + 7 event packets; the tone recorded');
});
