import t from 'tap';
import { RtpReceiveStats } from '../../src/rtp/receive-stats.js';
import { buildRtcpReport, ntpMiddle, ntpTime, parseRtcp, type ReportBlock } from '../../src/rtp/rtcp.js';

const block: ReportBlock = { ssrc: 0xabcdef01, fractionLost: 25, cumulativeLost: -3, highestSequence: 0x0001fffe, jitter: 77, lastSr: 0x12345678, delaySinceLastSr: 65536 };

t.test('a sender report with a block and a CNAME round-trips', async (t) => {
  const sender = { ...ntpTime(Date.UTC(2026, 0, 1, 0, 0, 0, 500)), rtpTimestamp: 0xfffffff0, packetCount: 250, octetCount: 40000 };
  const bytes = buildRtcpReport({ ssrc: 42, sender, blocks: [block], cname: 'ferry@127.0.0.1' });
  t.equal(bytes.length % 4, 0, 'whole 32-bit words');
  t.equal(bytes[1], 200, 'SR first');
  const parsed = parseRtcp(bytes)!;
  t.ok(parsed);
  t.equal(parsed.reports.length, 1);
  t.same(parsed.reports[0], { kind: 'sr', ssrc: 42, sender, blocks: [block] });
  t.equal(parsed.cnames.get(42), 'ferry@127.0.0.1');
  t.equal(sender.ntpFraction, 0x80000000, 'half a second in NTP fraction');
  t.equal(sender.ntpSeconds, Date.UTC(2026, 0, 1) / 1000 + 2208988800);
  t.equal(ntpMiddle(0x0001abcd, 0x12340000), 0xabcd1234);
});

t.test('a receiver report without blocks, CNAMEs of every length pad correctly', async (t) => {
  for (let n = 1; n <= 9; n++) {
    const cname = 'x'.repeat(n);
    const parsed = parseRtcp(buildRtcpReport({ ssrc: 7, cname }))!;
    t.equal(parsed.reports[0].kind, 'rr');
    t.same(parsed.reports[0].blocks, []);
    t.equal(parsed.cnames.get(7), cname, `CNAME of ${n}`);
  }
});

t.test('malformed RTCP is null, never a throw', async (t) => {
  const good = buildRtcpReport({ ssrc: 1, blocks: [block], cname: 'a' });
  t.equal(parseRtcp(good.subarray(0, 10)), null, 'truncated');
  const badVersion = Buffer.from(good);
  badVersion[0] = 0x41;
  t.equal(parseRtcp(badVersion), null);
  const badLength = Buffer.from(good);
  badLength.writeUInt16BE(200, 2);
  t.equal(parseRtcp(badLength), null);
  for (let i = 0; i < 2000; i++) {
    const bytes = Buffer.from(good);
    bytes[i % bytes.length] ^= 1 << (i % 8);
    parseRtcp(bytes); // must not throw
  }
  t.pass('bit flips parsed or refused');
});

t.test('jitter follows RFC 3550 A.8 on a synthetic arrival series', async (t) => {
  // 20 ms packets (160 units); arrivals offset by a known pattern of transit delays (in timestamp units).
  const transit = [0, 8, 0, 16, 4, 4, 40, 0, 0, 24];
  const stats = new RtpReceiveStats();
  let expected = 0;
  for (let i = 0; i < transit.length; i++) {
    stats.update(1000 + i, 5000 + 160 * i, 160 * i + transit[i] + 123);
    if (i > 0) expected += (Math.abs(transit[i] - transit[i - 1]) - expected) / 16;
  }
  t.ok(Math.abs(stats.jitter - expected) < 1e-9, `jitter ${stats.jitter} = ${expected}`);
  t.ok(expected > 5, 'the series does jitter');
  t.equal(stats.lost, 0);
  t.equal(stats.reportBlock(9).jitter, Math.round(expected));
});

t.test('loss, fraction lost and the extended highest sequence across the wrap', async (t) => {
  const stats = new RtpReceiveStats();
  let ts = 0;
  const sequences: number[] = [];
  for (let s = 65530; s < 65530 + 20; s++) sequences.push(s & 0xffff);
  const dropped = new Set([65533, 2, 5]);
  for (const seq of sequences) {
    ts += 160;
    if (!dropped.has(seq)) stats.update(seq, ts, ts);
  }
  t.equal(stats.expected, 20);
  t.equal(stats.received, 17);
  t.equal(stats.lost, 3);
  t.equal(stats.extendedHighest, 0x10000 + 13, 'one cycle, highest 13');
  const first = stats.reportBlock(1);
  t.equal(first.fractionLost, Math.floor((3 * 256) / 20));
  t.equal(first.cumulativeLost, 3);
  t.equal(first.highestSequence, 0x1000d);
  // Next interval: 10 more, none lost, one late duplicate: the fraction is 0, the total does not grow.
  for (let s = 14; s < 24; s++) stats.update(s, (ts += 160), ts);
  stats.update(20, ts, ts);
  const second = stats.reportBlock(1);
  t.equal(second.fractionLost, 0);
  t.equal(second.cumulativeLost, 2, 'a duplicate counts as received (A.3)');
  // Reordering: 30 before 29.
  stats.update(30, (ts += 160), ts);
  stats.update(29, ts - 160, ts);
  t.equal(stats.outOfOrder, 2, 'the late duplicate of 20, then 29');
});
