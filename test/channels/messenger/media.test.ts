import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { MediaChecker } from '../../../src/channels/messenger/media-check.js';
import { TargetGuard } from '../../../src/channels/webhooks/target-guard.js';
import { startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { api, customer, messengerOf, newNumber, statusUntil } from './helpers.js';

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0'), Buffer.alloc(2000, 1)]);
const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(2000, 0x20)]);
const MP3 = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(2000, 0)]);

t.test(`media links checked by a bounded fetch and their content (${backendLabel})`, async (t) => {
  // A local HTTPS file server with a self-signed certificate, trusted through messenger.mediaCaFile.
  const dir = mkdtempSync(join(tmpdir(), 'ferry-media-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:media.test'], { stdio: 'ignore' });
  const files: Record<string, { body: Buffer; type: string; chunked?: boolean }> = {
    '/photo.jpg': { body: JPEG, type: 'image/jpeg' },
    '/pdf-named.jpg': { body: PDF, type: 'image/jpeg' },
    '/big.jpg': { body: Buffer.concat([JPEG, Buffer.alloc(5 * 1024 * 1024)]), type: 'image/jpeg' },
    '/big-chunked.jpg': { body: Buffer.concat([JPEG, Buffer.alloc(5 * 1024 * 1024)]), type: 'image/jpeg', chunked: true },
    '/report.pdf': { body: PDF, type: 'application/pdf' },
    '/voice.mp3': { body: MP3, type: 'audio/mpeg' },
  };
  const server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
    const f = files[req.url ?? ''];
    if (!f) return void res.writeHead(404).end();
    if (f.chunked) {
      res.writeHead(200, { 'content-type': f.type });
      for (let i = 0; i < f.body.length; i += 65536) res.write(f.body.subarray(i, i + 65536));
      return void res.end();
    }
    res.writeHead(200, { 'content-type': f.type, 'content-length': f.body.length }).end(f.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  const base = `https://127.0.0.1:${port}`;

  t.test('a link by hostname: resolved by the guard (every address checked), connected to a checked address', async (t) => {
    // .test names never resolve (RFC 6761): only the guard's lookup leads to the server. Node 20 asks a connection's
    // lookup for all addresses; a pinned lookup answering one address failed every such link with "Invalid IP address".
    const lookup = async (host: string) => {
      if (host === 'media.test') return [{ address: '127.0.0.1', family: 4 }];
      if (host === 'meta.test') return [{ address: '127.0.0.1', family: 4 }, { address: '169.254.169.254', family: 4 }];
      throw new Error(`ENOTFOUND ${host}`);
    };
    const ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
    const media = new MediaChecker({ guard: new TargetGuard(true, lookup), ca });
    t.match(await media.check('image', `https://media.test:${port}/photo.jpg`), { ok: true, mime: 'image/jpeg' });
    t.equal(await media.reachable(`https://media.test:${port}/photo.jpg`), true, "the simulator's fetch too");
    t.match(await media.check('image', `https://media.test:${port}/big-chunked.jpg`), { ok: false, reason: /larger/ }, 'no Content-Length: cut by the bytes read');
    t.match(await media.check('image', `https://meta.test:${port}/photo.jpg`), { ok: false, reason: /link-local/ }, 'one address is cloud metadata');
    t.equal(await media.reachable(`https://meta.test:${port}/photo.jpg`), false, 'not fetched by the simulator either');
    const publicOnly = new MediaChecker({ guard: new TargetGuard(false, lookup), ca });
    t.match(await publicOnly.check('image', `https://media.test:${port}/photo.jpg`), { ok: false, reason: /private/ }, 'loopback refused where private targets are not');
    t.equal(await publicOnly.reachable(`https://media.test:${port}/photo.jpg`), false, 'reachable() is guarded');
  });

  const d = await startDaemon({ FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '10', FERRY_MESSENGER_MEDIA_CA_FILE: join(dir, 'cert.pem'), FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const a = api(d, acme.token);
  const { simulator: sim } = messengerOf(d);
  const to = newNumber();
  await sim!.userReply(to, 'send me the files');

  const good: Array<[string, Record<string, unknown>]> = [
    ['image', { link: `${base}/photo.jpg`, caption: 'a photo' }],
    ['document', { link: `${base}/report.pdf`, filename: 'report.pdf' }],
    ['audio', { link: `${base}/voice.mp3` }],
  ];
  for (const [type, obj] of good) {
    const r = await a.send({ to, type, [type]: obj });
    t.equal(r.status, 200, `${type}: ${r.text}`);
    const s = await statusUntil(d, acme.token, r.json.data.messageId, (x) => x.status === 'read' || x.status === 'failed');
    t.equal(s.status, 'read', `${type} delivered and read (the simulator fetched the link too)`);
  }

  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['image', { link: `${base}/pdf-named.jpg` }, /application\/pdf/],
    ['image', { link: `${base}/big.jpg` }, /bytes|larger/],
    ['image', { link: `${base}/big-chunked.jpg` }, /larger/],
    ['image', { link: 'https://127.0.0.1:1/photo.jpg' }, /could not be fetched/],
    ['image', { link: `${base}/missing.jpg` }, /HTTP 404/],
    ['image', { link: `http://127.0.0.1:${(server.address() as AddressInfo).port}/photo.jpg` }, /HTTPS/],
    ['video', { link: `${base}/photo.jpg` }, /image\/jpeg/],
  ];
  const sentBefore = sim!.sent.length;
  for (const [type, obj, reason] of bad) {
    const r = await a.send({ to, type, [type]: obj });
    t.equal(r.status, 422, `${obj.link}: ${r.text}`);
    t.equal(r.json.code, 'WA004');
    t.match(r.json.message, reason);
  }
  t.equal(sim!.sent.length, sentBefore, 'nothing was sent for a refused link');
});
