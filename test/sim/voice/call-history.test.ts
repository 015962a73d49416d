import t from 'tap';
import { CallHistory } from '../../../src/sim/voice/call-history.js';
import type { TrunkCall } from '../../../src/sim/voice/trunk-call.js';

/** The part of a TrunkCall the history looks at. */
function fakeCall(id: string, live: boolean, samples = 0) {
  const call = { id, live, recordedSamples: samples, dropped: false, dropRecording: () => undefined as void };
  call.dropRecording = () => {
    call.recordedSamples = 0;
    call.dropped = true;
  };
  return call;
}
const asCall = (c: ReturnType<typeof fakeCall>) => c as unknown as TrunkCall;

t.test('keeps the newest calls, never a live one', async (t) => {
  const history = new CallHistory(3, 1000);
  const live = fakeCall('1', true);
  history.add(asCall(live));
  for (let i = 2; i <= 6; i++) history.add(asCall(fakeCall(String(i), false)));
  t.same(history.list().map((c) => c.id), ['1', '5', '6'], 'the oldest finished calls went; the live one stayed');
  t.same(history.live().map((c) => c.id), ['1']);
  t.equal(history.get('2'), undefined);
  t.equal(history.get('6')?.id, '6');
});

t.test('recordings are dropped oldest first beyond the budget', async (t) => {
  const history = new CallHistory(10, 1000);
  const calls = [fakeCall('a', false, 400), fakeCall('b', false, 400), fakeCall('c', false, 400)];
  for (const c of calls) history.add(asCall(c));
  history.enforceBudget();
  t.same(calls.map((c) => c.dropped), [true, false, false], 'the newest 800 samples kept');
  history.enforceBudget();
  t.same(calls.map((c) => c.recordedSamples), [0, 400, 400], 'stable');
});
