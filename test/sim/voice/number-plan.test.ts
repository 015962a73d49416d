import t from 'tap';
import { behaviourOf, digitsOf } from '../../../src/sim/voice/number-plan.js';

t.test('rejections by the last three digits', async (t) => {
  for (const status of [486, 404, 503, 500, 603, 488]) t.same(behaviourOf(`+23320000${status}`), { outcome: 'reject', status }, `…${status}`);
  t.same(behaviourOf('+233200000408'), { outcome: 'reject', status: 408, ringMs: 1000 }, '…408 rings first');
});

t.test('…480 rings until cancelled', async (t) => {
  t.same(behaviourOf('+233200000480'), { outcome: 'ring' });
});

t.test('answers and what follows them', async (t) => {
  const plain = { outcome: 'answer', provisional: 180, ringMs: 100, answerMs: 200, telephoneEvent: true, then: { action: 'none' } };
  t.same(behaviourOf('+233201234567'), plain, 'any other number: 180, then 200');
  t.same(behaviourOf('+233200000183'), { ...plain, provisional: 183, answerMs: 1000 }, '…183 early media, answered after 1 s');
  t.same(behaviourOf('+233200000555'), { ...plain, then: { action: 'hangup', afterMs: 2000 } });
  t.same(behaviourOf('+233200000077'), { ...plain, then: { action: 'digits', digits: '1234#', afterMs: 500 } });
  t.same(behaviourOf('+233200000088'), { ...plain, then: { action: 'tone', frequencyHz: 440, durationMs: 1000 } });
  t.same(behaviourOf('+233200000066'), { ...plain, telephoneEvent: false });
});

t.test('three-digit endings win over two-digit ones; only digits count', async (t) => {
  t.equal(behaviourOf('+233200000488').outcome, 'reject', '…488 is a rejection, not …88');
  t.same(behaviourOf('+233200000188'), behaviourOf('88'), '…188 is …88');
  t.same(behaviourOf('0486'), behaviourOf('+233 20 000 0486'), 'spaces and + are ignored');
  t.equal(digitsOf('+233-20 486'), '23320486');
  t.equal(behaviourOf('').outcome, 'answer', 'no number: the default');
  t.equal(behaviourOf('alice').outcome, 'answer', 'a name: the default');
  t.equal(behaviourOf('86').outcome, 'answer', 'too short for a three-digit rule');
});
