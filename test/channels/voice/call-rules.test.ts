// A call's statuses and SIP mapping, its billing arithmetic and its script checks (src/channels/voice/call-*.ts).
import t from 'tap';
import { affordableSeconds, billableSeconds, costMicros, VoicePrices } from '../../../src/channels/voice/call-pricing.js';
import { scriptOf, urlsOf } from '../../../src/channels/voice/call-script.js';
import { guessAnsweredBy } from '../../../src/channels/voice/answering-machine.js';
import { callbackEventOf, canMove, CALL_STATUSES, eventOf, isFinal, isRinging, statusOfFinalResponse } from '../../../src/channels/voice/call-status.js';

t.test('SIP responses map to the statuses Twilio users expect', async (t) => {
  t.equal(statusOfFinalResponse(200), 'in-progress');
  t.equal(statusOfFinalResponse(486), 'busy');
  t.equal(statusOfFinalResponse(600), 'busy');
  t.equal(statusOfFinalResponse(408), 'no-answer');
  t.equal(statusOfFinalResponse(480), 'no-answer');
  t.equal(statusOfFinalResponse(487), 'canceled');
  for (const code of [403, 404, 488, 500, 503, 603]) t.equal(statusOfFinalResponse(code), 'failed', `${code} fails the call`);
  t.ok(isRinging(180) && isRinging(183));
  t.notOk(isRinging(100), '100 Trying is not ringing');
});

t.test('statuses move forward only, final ones never move', async (t) => {
  t.ok(canMove('queued', 'initiated'));
  t.ok(canMove('initiated', 'in-progress'), 'answered without ringing first');
  t.ok(canMove('ringing', 'canceled'));
  t.notOk(canMove('in-progress', 'ringing'));
  t.notOk(canMove('in-progress', 'busy'), 'an answered call ends completed or failed');
  t.notOk(canMove('ringing', 'ringing'), 'a repeated status is no move');
  for (const s of CALL_STATUSES.filter(isFinal)) for (const to of CALL_STATUSES) t.notOk(canMove(s, to), `${s} is final`);
  t.equal(eventOf('in-progress'), 'voice.call.answered');
  t.equal(eventOf('busy'), 'voice.call.failed');
  t.equal(eventOf('queued'), null);
  t.equal(callbackEventOf('in-progress'), 'answered');
  t.equal(callbackEventOf('no-answer'), 'completed', "every final status is the callback's completed");
});

t.test('billing increments, cost and what a balance affords', async (t) => {
  const sixty = { minimumSeconds: 60, incrementSeconds: 60 };
  const thirtySix = { minimumSeconds: 30, incrementSeconds: 6 };
  t.equal(billableSeconds(0, sixty), 0, 'unanswered is free');
  t.equal(billableSeconds(1, sixty), 60);
  t.equal(billableSeconds(60, sixty), 60);
  t.equal(billableSeconds(61, sixty), 120);
  t.equal(billableSeconds(0.2, thirtySix), 30);
  t.equal(billableSeconds(31, thirtySix), 36);
  t.equal(billableSeconds(36.5, thirtySix), 42, 'part seconds round up first');
  t.equal(costMicros(50_000, 60), 50_000, 'a minute at 0.05');
  t.equal(costMicros(50_000, 36), 30_000);
  t.equal(costMicros(10_001, 1), 167, 'rounded up to a micro-unit');
  t.equal(affordableSeconds(50_000, 49_999, 3600, sixty), 0, 'not even the first minute');
  t.equal(affordableSeconds(50_000, 50_000, 3600, sixty), 60);
  t.equal(affordableSeconds(50_000, 149_999, 3600, sixty), 120);
  t.equal(affordableSeconds(50_000, 10_000_000, 3600, sixty), 3600, 'capped at the longest call');
  t.equal(affordableSeconds(0, 0, 900, sixty), 900, 'a free destination');
  t.equal(affordableSeconds(60_000, 30_000 + 6_000 * 3 + 5_999, 3600, thirtySix), 48, '30 s then three steps of 6');
  for (let avail = 0; avail < 400_000; avail += 7_777) {
    const s = affordableSeconds(60_000, avail, 3600, thirtySix);
    t.ok(s === 0 || costMicros(60_000, s) <= avail, `what is afforded is paid for (${avail})`);
    if (s) t.ok(costMicros(60_000, s + 6) > avail, `one more step would not be (${avail})`);
  }
  const prices = new VoicePrices({ defaultPerMinute: 0.1, entries: [{ prefix: '233', perMinute: 0.05 }, { prefix: '23324', perMinute: 0.04 }] }, sixty);
  t.equal(prices.perMinuteMicros('+233201234567'), 50_000);
  t.equal(prices.perMinuteMicros('233241234567'), 40_000, 'the longest prefix wins');
  t.equal(prices.perMinuteMicros('+14155550100'), 100_000, 'the default');
  t.equal(new VoicePrices({ defaultPerMinute: null, entries: [] }, sixty).perMinuteMicros('1'), 0, 'no default: free');
});

t.test('a call is given exactly one of say, play or script', async (t) => {
  t.same(scriptOf({ say: { text: 'hi' } }), { steps: [{ say: { text: 'hi' } }] });
  t.same(scriptOf({ play: { url: 'https://example.com/a.wav' } }), { steps: [{ play: { url: 'https://example.com/a.wav' } }] });
  t.match(scriptOf({}), { error: /exactly one/ });
  t.match(scriptOf({ say: { text: 'a' }, play: { url: 'https://x' } }), { error: /exactly one/ });
  t.match(scriptOf({ script: [] }), { error: /at least one/, field: 'script' });
  t.match(scriptOf({ script: Array.from({ length: 21 }, () => ({ pause: { seconds: 1 } })) }), { error: /at most 20/ });
  t.match(scriptOf({ script: [{ say: { text: 'a' }, pause: { seconds: 1 } } as never] }), { field: 'script[0]' });
  t.match(scriptOf({ script: [{ gather: { finishOnKey: 'x' } }] }), { field: 'script[0].gather.finishOnKey' });
  t.match(scriptOf({ script: [{ gather: { prompt: {} } }] }), { field: 'script[0].gather.prompt' });
  const ok = scriptOf({ script: [{ say: { text: 'Press 1' } }, { gather: { digits: 1, prompt: { play: { url: 'https://a/b.wav' } } } }, { play: { url: 'https://a/c.wav' } }, { hangup: {} }] });
  t.ok('steps' in ok);
  if ('steps' in ok) t.same(urlsOf(ok.steps), ['https://a/b.wav', 'https://a/c.wav'], 'every URL the call will fetch');
});

t.test('answering machine guess from the first speech', async (t) => {
  t.equal(guessAnsweredBy([]), 'unknown', 'silence');
  t.equal(guessAnsweredBy([[100, 900]]), 'human', '"Hello?" then waiting');
  t.equal(guessAnsweredBy([[0, 3200]]), 'machine', 'a long greeting from the start');
  t.equal(guessAnsweredBy([[100, 900], [1200, 2600]]), 'unknown', 'no pause after the first words');
  t.equal(guessAnsweredBy([[2500, 3000]]), 'unknown', 'a long wait before speaking');
  t.equal(guessAnsweredBy([[0, 1000], [2000, 3500]]), 'unknown', 'too much speech for a greeting and a wait');
});
