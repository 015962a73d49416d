import t from 'tap';
import { DtmfReceiver, DTMF_DIGITS, readTelephoneEvent, telephoneEventPackets, writeTelephoneEvent, type TelephoneEventPacket } from '../../src/rtp/dtmf.js';
import { InbandDtmfDetector } from '../../src/rtp/dtmf-detector.js';
import { generateDtmf, generateTone } from '../../src/rtp/tone.js';

const payloadOf = (p: TelephoneEventPacket): Buffer => {
  const out = Buffer.alloc(4);
  writeTelephoneEvent(out, 0, p);
  return out;
};

t.test('a key is sent as growing durations, marker first, three end packets', async (t) => {
  const packets = telephoneEventPackets('5', { durationMs: 100 });
  t.same(
    packets.map((p) => [p.event, p.duration, p.marker, p.end]),
    [
      [5, 160, true, false],
      [5, 320, false, false],
      [5, 480, false, false],
      [5, 640, false, false],
      [5, 800, false, true],
      [5, 800, false, true],
      [5, 800, false, true],
    ],
  );
  const bytes = payloadOf(packets[4]);
  t.equal(bytes.toString('hex'), '05' + '8a' + '0320', 'event 5, E bit, volume 10, duration 800');
  t.same(readTelephoneEvent(bytes, 0, 4), { ...packets[4], marker: false });
  t.equal(readTelephoneEvent(bytes, 0, 3), null);
  t.same(telephoneEventPackets('#').map((p) => p.event), [11, 11, 11, 11, 11, 11, 11]);
  t.throws(() => telephoneEventPackets('x'), RangeError);
});

/** A sender's stream for `digits`: each event timestamped at its start, 20 ms (160) apart, as the session sends them. */
function stream(digits: string): { timestamp: number; payload: Buffer }[] {
  const out: { timestamp: number; payload: Buffer }[] = [];
  let clock = 0xfffffe00; // crosses the 32-bit wrap on the way
  for (const digit of digits) {
    const start = clock >>> 0;
    for (const p of telephoneEventPackets(digit)) {
      out.push({ timestamp: start, payload: payloadOf(p) });
      clock += 160;
    }
    clock += 160 * 3;
  }
  return out;
}

const receive = (packets: { timestamp: number; payload: Buffer }[]): string => {
  const receiver = new DtmfReceiver();
  let got = '';
  for (const p of packets) got += receiver.push(p.timestamp, p.payload) ?? '';
  return got;
};

t.test('every key arrives exactly once, repeats and end packets notwithstanding', async (t) => {
  t.equal(receive(stream(DTMF_DIGITS)), DTMF_DIGITS);
  t.equal(receive(stream('1111')), '1111', 'the same key pressed again is a new event');
});

t.test('a lost start packet, duplicates and reordering within an event still give each key once', async (t) => {
  const packets = stream('12#9');
  // Drop every event's first packet, duplicate some, swap neighbours within each event.
  const mangled: typeof packets = [];
  for (let i = 0; i < packets.length; i += 7) {
    const event = packets.slice(i, i + 7).slice(1);
    [event[0], event[2]] = [event[2], event[0]];
    mangled.push(event[0], event[0], ...event.slice(1), event[3]);
  }
  t.equal(receive(mangled), '12#9');
  // Only the end packets of each event.
  t.equal(receive(packets.filter((_, i) => i % 7 >= 4)), '12#9');
});

t.test('a straggler of an older event is not a new key; events other than keys are ignored', async (t) => {
  const packets = stream('34');
  const receiver = new DtmfReceiver();
  let got = '';
  for (const p of packets.slice(0, 9)) got += receiver.push(p.timestamp, p.payload) ?? '';
  got += receiver.push(packets[3].timestamp, packets[3].payload) ?? '';
  for (const p of packets.slice(9)) got += receiver.push(p.timestamp, p.payload) ?? '';
  t.equal(got, '34');
  t.equal(receiver.push(123, Buffer.from('10000100', 'hex')), undefined, 'event 16 (flash) is no key');
  t.equal(receiver.push(456, Buffer.from('01', 'hex')), undefined, 'short payload');
});

t.test('Goertzel finds all 16 keys in generated tones, once each', async (t) => {
  const detector = new InbandDtmfDetector();
  const signal = generateDtmf('123A456B789C*0#D');
  // Fed in 160-sample frames, as the receive path does.
  let got = '';
  for (let i = 0; i < signal.length; i += 160) got += detector.push(signal, i, Math.min(160, signal.length - i));
  t.equal(got, '123A456B789C*0#D');
});

t.test('Goertzel tolerates twist and level, and debounces a held key', async (t) => {
  t.equal(new InbandDtmfDetector().push(generateDtmf('159', { twistDb: 4, amplitude: 3000 })), '159', 'row 4 dB down');
  t.equal(new InbandDtmfDetector().push(generateDtmf('7', { toneMs: 600 })), '7', 'a long press is one key');
  t.equal(new InbandDtmfDetector().push(generateDtmf('77')), '77', 'two presses are two keys');
  t.equal(new InbandDtmfDetector().push(generateDtmf('8', { twistDb: 12 })), '', 'row 12 dB down is refused (twist)');
  t.equal(new InbandDtmfDetector().push(generateDtmf('8', { toneMs: 20 })), '', 'a 20 ms blip is too short');
});

t.test('Goertzel rejects noise, speech-like tones and silence', async (t) => {
  let seed = 12345;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const noise = new Int16Array(8000 * 2);
  for (let i = 0; i < noise.length; i++) noise[i] = Math.round((random() - 0.5) * 16000);
  t.equal(new InbandDtmfDetector().push(noise), '', 'white noise');
  t.equal(new InbandDtmfDetector().push(generateTone([440], 1000)), '', 'a single tone');
  t.equal(new InbandDtmfDetector().push(generateTone([300, 1000, 2200], 1000, 4000)), '', 'three tones, none a key');
  t.equal(new InbandDtmfDetector().push(generateTone([697], 1000)), '', 'a row tone alone');
  t.equal(new InbandDtmfDetector().push(new Int16Array(8000)), '', 'silence');
  // A key under noise at ~10 dB SNR is still found.
  const key = generateDtmf('6', { toneMs: 200 });
  for (let i = 0; i < key.length; i++) key[i] += Math.round((random() - 0.5) * 2000);
  t.equal(new InbandDtmfDetector().push(key), '6', 'a key with some noise');
});
