// A session that sends silence while nothing is queued (as phones do, so a carrier's border controller does not take
// a quiet call for a dead one), one that sends nothing, playback in between, and RTCP alone keeping a silent far end
// from timing out.
import { createSocket } from 'node:dgram';
import t from 'tap';
import { MediaEngine } from '../../src/rtp/media-engine.js';
import { decodeRtp } from '../../src/rtp/rtp-packet.js';
import { buildRtcpReport } from '../../src/rtp/rtcp.js';
import { generateTone } from '../../src/rtp/tone.js';

// Ports of its own (test/rtp/media-engine.test.ts uses 41000–41499).
const PORTS = { min: 41600, max: 41699 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function listener() {
  const socket = createSocket('udp4');
  const packets: Array<{ payloadType: number; marker: boolean; sequence: number }> = [];
  socket.on('message', (m) => {
    const p = decodeRtp(m);
    if (p) packets.push({ payloadType: p.payloadType, marker: p.marker, sequence: p.sequence });
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return { socket, packets, port: socket.address().port };
}

t.test('continuous sessions stream silence between prompts; others stay quiet', async (t) => {
  const engine = await MediaEngine.start({ portRange: PORTS });
  t.teardown(() => engine.close());
  const quietRx = await listener();
  const streamRx = await listener();
  t.teardown(() => quietRx.socket.close());
  t.teardown(() => streamRx.socket.close());
  const quiet = await engine.open({ codec: 'PCMU', remote: { host: '127.0.0.1', port: quietRx.port } });
  const stream = await engine.open({ codec: 'PCMA', remote: { host: '127.0.0.1', port: streamRx.port }, continuous: true });
  await sleep(500);
  t.equal(quietRx.packets.length, 0, 'nothing queued, nothing sent');
  t.ok(streamRx.packets.length >= 10, `silence streamed (${streamRx.packets.length} packets in 0.5 s)`);
  t.ok(streamRx.packets.every((p) => p.payloadType === 8), 'in the session codec');
  t.equal(streamRx.packets.filter((p) => p.marker).length, 1, 'one talkspurt: the marker only on the first packet');
  const before = streamRx.packets.length;
  const done = stream.played();
  stream.play(generateTone([1000], 200));
  await done;
  await sleep(200);
  const seq = streamRx.packets.map((p) => p.sequence);
  t.ok(streamRx.packets.length > before, 'playback goes on in the same stream');
  t.ok(seq.every((s, i) => i === 0 || s === ((seq[i - 1] + 1) & 0xffff)), 'sequence numbers without a gap across silence and playback');
  await quiet.stop();
  await stream.stop();
});

t.test("a far end's RTCP alone keeps a session from timing out", async (t) => {
  const engine = await MediaEngine.start({ portRange: PORTS });
  t.teardown(() => engine.close());
  const farEnd = createSocket('udp4');
  await new Promise<void>((r) => farEnd.bind(0, '127.0.0.1', r));
  t.teardown(() => farEnd.close());
  const withReports = await engine.open({ codec: 'PCMU', rtpTimeoutMs: 600, remote: { host: '127.0.0.1', port: farEnd.address().port } });
  const without = await engine.open({ codec: 'PCMU', rtpTimeoutMs: 600 });
  let timedOutWith = false;
  let timedOutWithout = false;
  withReports.on('rtpTimeout', () => (timedOutWith = true));
  without.on('rtpTimeout', () => (timedOutWithout = true));
  const report = buildRtcpReport({ ssrc: 0x1234, cname: 'far-end' });
  for (let i = 0; i < 10; i++) {
    farEnd.send(report, withReports.localPort + 1, '127.0.0.1');
    await sleep(150);
  }
  t.notOk(timedOutWith, 'reports every 150 ms: alive');
  t.ok(timedOutWithout, 'nothing at all for 1.5 s: timed out');
  await withReports.stop();
  await without.stop();
});
