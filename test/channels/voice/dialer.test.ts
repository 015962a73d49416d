// The browser dialer on a whole daemon with its embedded SIP trunk simulator, on both backends: tokens (minted,
// refused when forged or expired), and in Debian's chromium (fake microphone) the page signs in, dials the trunk
// simulator, shows the status changes, sends a key, hangs up; the simulator recorded the browser's audio and the key;
// the call is an ordinary voice call of the account. A screenshot is kept. Browser parts skip, with one line, where
// chromium is not installed.
import t from 'tap';
import WebSocket from 'ws';
import { analyzeAudio } from '../../../src/audio/analysis.js';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { DialerTokens } from '../../../src/channels/voice/browser/dialer-token.js';
import { launchBrowser, screenshotPath } from '../../helpers/browser.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import { trunkCaller } from './helpers/trunk-caller.js';
import { wsPhone } from './helpers/ws-phone.js';

t.setTimeout(240_000);

const FROM = '+233200000202';
/** A number of the account routed to the dialer identity alice: calls to it ring the page. */
const ROUTED = '+233200000203';
const CALLER = '+14155550313';

/** Whether a WebSocket handshake to the dialer's SIP path with this token is accepted. */
function handshake(api: string, token: string): Promise<number | 'open'> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${api.replace(/^http/, 'ws')}/v1/voice/dialer/sip?token=${encodeURIComponent(token)}`, 'sip');
    ws.on('open', () => {
      ws.close();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('error', () => resolve(0));
  });
}

t.test(`the browser dialer (${backendLabel})`, async (t) => {
  const d = await startDaemon({
    FERRY_VOICE_SIMULATOR: 'on',
    FERRY_VOICE_MEDIA_PORT_MIN: '47400',
    FERRY_VOICE_MEDIA_PORT_MAX: '47599',
    FERRY_VOICE_DIALER_PORT_MIN: '47900',
    FERRY_VOICE_DIALER_PORT_MAX: '47999',
    FERRY_VOICE_PRICES_DEFAULT_PER_MINUTE: '0.06',
    ...(process.env.DIALER_DEBUG ? { FERRY_LOG_LEVEL: 'warn' } : {}),
  }, undefined, process.env.DIALER_DEBUG ? process.stderr : undefined);
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'voice-dialer', ['voice:calls', 'voice:agents']);
  const { token: otherToken } = await accountWithKey(d, 'voice-dialer-sms-only', ['sms:send']);
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: ROUTED });
  await d.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });
  const voice = d.daemon.modules.service<VoiceModuleService>('voice');
  // The SIP port the daemon picked (port 0): a fixed port can be taken, e.g. as a Postgres connection's local port.
  const FERRY_SIP_PORT = voice.sipPort()!;

  const minted = await call(d.api, 'POST', '/v1/voice/dialer/token', { token, body: { identity: 'alice', ttlSeconds: 600 } });
  t.equal(minted.status, 201, minted.text);
  t.match(minted.json.data, { identity: 'alice', from: FROM, webSocketUrl: /^ws:\/\/127\.0\.0\.1:\d+\/v1\/voice\/dialer\/sip\?token=/, dialerUrl: /\/dialer#token=/ });
  const dialerToken = minted.json.data.token as string;

  await t.test('tokens: scope, caller ID, forged and expired ones refused at the handshake', async (t) => {
    t.equal((await call(d.api, 'POST', '/v1/voice/dialer/token', { token: otherToken, body: {} })).status, 403, 'a key without voice:calls');
    const notOwned = await call(d.api, 'POST', '/v1/voice/dialer/token', { token, body: { from: '+233200000999' } });
    t.equal(notOwned.json.code, 'CALLER_ID_NOT_ALLOWED');
    t.equal((await call(d.api, 'POST', '/v1/voice/dialer/token', { token, body: { ttlSeconds: 5 } })).status, 400, 'a lifetime under a minute');
    t.equal(await handshake(d.api, dialerToken), 'open', 'the minted token connects');
    t.equal(await handshake(d.api, dialerToken.slice(0, -4) + 'AAAA'), 403, 'a forged signature is refused');
    const foreign = await new DialerTokens(Buffer.alloc(32, 7)).mint({ accountId: account.id, keyId: 'k', identity: 'mallory', from: FROM.slice(1) }, 600);
    t.equal(await handshake(d.api, foreign.token), 403, 'a token signed with another key is refused');
    t.equal(await handshake(d.api, ''), 403, 'no token is refused');
    const page = await call(d.api, 'GET', '/dialer');
    t.equal(page.status, 200);
    t.match(page.headers.get('content-security-policy'), /script-src 'self'/, 'the page is served with a strict CSP');
    const bundle = await call(d.api, 'GET', '/dialer/jssip.js');
    t.equal(bundle.status, 200);
    t.ok(bundle.text.length > 50_000 && bundle.text.includes('WebSocketInterface'), 'JsSIP is bundled for the browser');
  });

  await t.test('in chromium: dial, ring, talk, a key, hang up; a busy number; the call log', async (t) => {
    const browser = await launchBrowser({ skip: (m) => t.plan(0, m), teardown: (fn) => t.teardown(fn) }, { fakeMedia: true });
    if (!browser) return;
    const context = await browser.newContext({ viewport: { width: 900, height: 900 } });
    await context.grantPermissions(['microphone'], { origin: d.api });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    const statuses: string[] = [];
    await page.exposeFunction('reportStatus', (s: string) => statuses.push(s));
    // Polled from here (the page's CSP has no unsafe-eval, which waitForFunction needs).
    const status = (want: (text: string) => boolean, ms: number) => until(async () => (await page.textContent('#status')) ?? '', want, ms);
    await page.goto(`${d.api}/dialer#token=${dialerToken}`);
    await page.evaluate(`new MutationObserver(() => window.reportStatus(document.getElementById('status').textContent)).observe(document.getElementById('status'), { childList: true, characterData: true, subtree: true })`);
    await status((s) => s === 'Ready', 20_000);
    t.equal(voice.browserPhone()!.registrations('alice'), 1, 'the page registered as alice');
    t.notOk(await page.evaluate(`location.hash.includes('token')`), 'the token is taken out of the address bar');

    await page.fill('#number', '+14155550212');
    await page.click('#call');
    await status((s) => s.startsWith('In call with +14155550212'), 30_000);
    const sim = await until(async () => voice.simulator()?.calls().find((c) => c.to.endsWith('14155550212')), (c) => c !== undefined && c.state === 'answered', 10_000);
    // The fake microphone beeps; let the trunk hear a few seconds of it, and a key from the keypad.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await page.click('#keypad button[data-key="5"]');
    await until(async () => voice.simulator()!.call(sim!.id)!.digitsReceived, (digits) => digits.includes('5'), 10_000);
    await page.click('#mute');
    t.equal(await page.getAttribute('#mute', 'aria-pressed'), 'true', 'mute is shown pressed');
    await page.screenshot({ path: screenshotPath('voice-dialer-in-call') });
    await page.click('#hangup');
    await status((s) => s === 'Call ended', 15_000);
    t.ok(statuses.some((s) => s.startsWith('Calling +14155550212')), 'calling was shown');
    t.ok(statuses.some((s) => s.startsWith('Ringing +14155550212')), 'ringing was shown');

    const record = await until(async () => voice.simulator()!.call(sim!.id)!, (c) => c.state !== 'answered', 10_000);
    t.equal(record.endedBy, 'caller', 'the hang-up reached the trunk as a BYE');
    t.equal(record.digitsReceived, '5', 'the key pressed on the page reached the trunk');
    const wav = record.wav();
    const pcm = new Int16Array(wav.buffer, wav.byteOffset + 44, (wav.length - 44) >> 1);
    const heard = analyzeAudio(pcm, 8000);
    t.ok(heard.nonSilentShare > 0.05, `the trunk heard the browser's microphone (${(heard.nonSilentShare * 100).toFixed(0)}% of frames, peak ${heard.peakDbfs.toFixed(1)} dBFS)`);

    const listed = await call(d.api, 'GET', '/v1/voice/calls?to=%2B14155550212', { token });
    const placed = listed.json.data.calls.find((c: { reference: string | null }) => c.reference === 'dialer:alice');
    t.ok(placed, 'the call is a voice call of the account, referenced to the dialer identity');
    const final = await until(async () => (await call(d.api, 'GET', `/v1/voice/calls/${placed.callId}`, { token })).json.data, (c) => c.status === 'completed', 15_000);
    t.equal(final.status, 'completed');
    t.equal(final.from, FROM, 'from the token\'s caller ID');
    t.equal(final.error, null, 'hung up in the browser is a normal end');
    t.ok(final.cost > 0, `billed (${final.cost} for ${final.billableSeconds ?? final.durationSeconds} s)`);

    await page.fill('#number', '+14155550486');
    await page.click('#call');
    await status((s) => s.startsWith('Call failed'), 30_000);
    t.match(await page.textContent('#status'), /486 Busy Here/, 'a busy number is shown as busy');

    // A call to a number routed to alice, from a trunk (Ferry's own SIP and RTP stacks here, on the trunk's address).
    const routed = await call(d.api, 'PUT', `/v1/voice/numbers/${encodeURIComponent(ROUTED)}`, { token, body: { dialerIdentity: 'alice' } });
    t.match(routed.json.data, { number: ROUTED, agentId: null, dialerIdentity: 'alice' }, 'the number is routed to the dialer identity');
    const carrier = await trunkCaller(t, { ferrySipPort: FERRY_SIP_PORT, from: CALLER, mediaPorts: { min: 48400, max: 48499 } });
    const { sip: caller, media, outcome } = await carrier.call(ROUTED);
    const answered = outcome.then((o) => o.answered);
    await status((s) => s === `Incoming call from ${CALLER}`, 20_000);
    t.equal(await page.isVisible('#answer'), true, 'the page offers to answer');
    await page.screenshot({ path: screenshotPath('voice-dialer-incoming') });
    await page.click('#answer');
    t.equal(await answered, true, "the caller's call was answered once the page answered");
    await status((s) => s.startsWith(`In call with ${CALLER}`), 15_000);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    caller.bye();
    await status((s) => s === 'Call ended', 15_000);
    const { recording } = await media.stop();
    const fromBrowser = analyzeAudio(recording ?? new Int16Array(0), 8000);
    t.ok(fromBrowser.nonSilentShare > 0.05, `the caller heard the browser's microphone (${(fromBrowser.nonSilentShare * 100).toFixed(0)}% of frames)`);
    const inbound = (await call(d.api, 'GET', '/v1/voice/calls', { token })).json.data.calls.find((c: { direction: string }) => c.direction === 'inbound');
    t.match(inbound, { direction: 'inbound', to: ROUTED, from: CALLER, reference: 'dialer:alice' }, 'an inbound call of the account, answered in the dialer');
    const inboundFinal = await until(async () => (await call(d.api, 'GET', `/v1/voice/calls/${inbound.callId}`, { token })).json.data, (c) => c.status === 'completed', 15_000);
    t.equal(inboundFinal.error, null, 'the caller hanging up is a normal end');

    // Hung up through the API while the page rings: the caller hears 487, the page logs a missed call.
    const ringing = await carrier.call(ROUTED);
    await status((s) => s === `Incoming call from ${CALLER}`, 20_000);
    const rung = (await call(d.api, 'GET', '/v1/voice/calls', { token })).json.data.calls.find((c: { direction: string; status: string }) => c.direction === 'inbound' && c.status !== 'completed');
    t.equal((await call(d.api, 'POST', `/v1/voice/calls/${rung.callId}/hangup`, { token })).status, 202);
    t.equal((await ringing.outcome).code, 487, 'the caller hears the call was ended');
    await status((s) => s === `Missed call from ${CALLER}`, 15_000);
    t.equal((await until(async () => (await call(d.api, 'GET', `/v1/voice/calls/${rung.callId}`, { token })).json.data, (c) => c.status !== 'initiated' && c.status !== 'queued', 10_000)).status, 'canceled');
    await ringing.media.stop();

    // Two browsers of alice: the page and a stand-in that rings and never answers. A call rings both; the page
    // answers and takes it, and the stand-in is cancelled.
    const other = await wsPhone(t, d.api, dialerToken, { onInvite: 'ring' });
    t.equal(await other.register(300), 200, 'a second browser signs in as alice');
    t.equal(voice.browserPhone()!.registrations('alice'), 2);
    const both = await carrier.call(ROUTED);
    const bothAnswered = both.outcome.then((o) => o.answered);
    await status((s) => s === `Incoming call from ${CALLER}`, 20_000);
    await until(async () => other.invites.length, (n) => n === 1, 10_000);
    t.equal(other.cancels.length, 0, 'both ring at once');
    await page.click('#answer');
    t.equal(await bothAnswered, true, 'the page answered first and took the call');
    await until(async () => other.cancels.length, (n) => n === 1, 10_000);
    t.equal(other.cancels[0].headers.get('call-id'), other.invites[0].headers.get('call-id'), 'the other browser was cancelled');
    await status((s) => s.startsWith(`In call with ${CALLER}`), 15_000);
    both.sip.bye();
    await status((s) => s === 'Call ended', 15_000);
    await both.media.stop();

    // A browser declining leaves the others ringing; once every one has declined, the caller hears busy.
    const decliner = await wsPhone(t, d.api, dialerToken, { onInvite: 'decline' });
    t.equal(await decliner.register(300), 200);
    other.drop();
    await until(async () => voice.browserPhone()!.registrations('alice'), (n) => n === 2, 10_000);
    const declined = await carrier.call(ROUTED);
    await status((s) => s === `Incoming call from ${CALLER}`, 20_000);
    await until(async () => decliner.invites.length, (n) => n === 1, 10_000);
    // Had the stand-in's 486 ended the call, the page would show a missed call (no Decline button) and log it so.
    await page.click('#decline');
    t.equal((await declined.outcome).code, 486, 'the page declined too: the caller hears 486');
    await declined.media.stop();
    decliner.drop();
    await until(async () => voice.browserPhone()!.registrations('alice'), (n) => n === 1, 10_000);

    // Routed to an identity nobody is signed in as: the caller hears 480.
    await call(d.api, 'PUT', `/v1/voice/numbers/${encodeURIComponent(ROUTED)}`, { token, body: { dialerIdentity: 'bob' } });
    const nobody = await carrier.call(ROUTED);
    t.equal((await nobody.outcome).code, 480, 'nobody signed in as bob: 480');
    await nobody.media.stop();

    const log = await page.$$eval('#log li', (items) => items.map((li) => li.textContent ?? ''));
    t.equal(log.length, 6, 'the six calls are in the call log');
    t.match(log[0], /\+14155550313 {2}incoming, declined/);
    t.match(log[1], /\+14155550313 {2}incoming, ended/);
    t.match(log[2], /\+14155550313 {2}missed/);
    t.match(log[3], /\+14155550313 {2}incoming, ended/);
    t.match(log[4], /\+14155550486 {2}failed: 486 Busy Here/);
    t.match(log[5], /\+14155550212 {2}ended/);
    await page.screenshot({ path: screenshotPath('voice-dialer-call-log') });
    t.same(pageErrors, [], 'no script error on the page');
  });
});
