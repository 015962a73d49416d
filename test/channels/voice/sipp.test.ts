// Ferry's voice calls against an independent SIP peer: a whole daemon whose trunks (from a config file, simulator off)
// point at SIPp processes playing the trunk (UAS), on both backends. Each case checks both sides: SIPp's exit code
// (its scenario passed: digest verified, SDP offer as expected, CANCEL/487/ACK, BYE answered) and the call as the API
// shows it (status, SIP code, history, the trunk that carried it).
import dgram from 'node:dgram';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import { HAVE_SIPP, freePort, runSipp, type SippProcess, type SippResult } from '../../sip/sipp.js';

t.setTimeout(240_000);

const FROM = '+233200000201';
// runSipp reads scenarios from test/sip/fixtures/sipp; ours live beside this file, named relative to that folder.
const SIP_FIXTURES = fileURLToPath(new URL('../../sip/fixtures/sipp/', import.meta.url));
const OUR_FIXTURES = fileURLToPath(new URL('./fixtures/sipp/', import.meta.url));
const scenario = (name: string) => relative(SIP_FIXTURES, join(OUR_FIXTURES, name));
const explain = (r: SippResult): string => `sipp exit ${r.code}\n${r.errors}\n${r.output.slice(-1500)}`;
const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];

/** One trunk per case, told apart by destination; failover has two trunks for one destination. */
const TRUNKS = [
  { name: 'digest', to: '14155550101', scenario: 'uas-digest.xml', username: 'alice', password: 's3cret' },
  { name: 'wrong-password', to: '14155550102', scenario: 'uas-digest-refused.xml', username: 'alice', password: 'not-it' },
  { name: 'busy', to: '14155550103', scenario: 'uas-busy.xml' },
  { name: 'ring-timeout', to: '14155550104', scenario: 'uas-ring-cancel.xml' },
  { name: 'ring-hangup', to: '14155550105', scenario: 'uas-ring-cancel.xml' },
  { name: 'remote-bye', to: '14155550106', scenario: 'uas-answer-then-bye.xml' },
  { name: 'down', to: '14155550107', scenario: 'uas-unavailable.xml', priority: 1 },
  { name: 'backup', to: '14155550107', scenario: 'uas-answer.xml', priority: 2 },
] as const;
type TrunkName = (typeof TRUNKS)[number]['name'];

t.test(`voice calls through SIPp as the trunk (${backendLabel})`, { skip: HAVE_SIPP ? false : 'needs sipp (Debian sip-tester)' }, async (t) => {
  // Each trunk's port is held (bound here) from the config file until its SIPp starts: the daemon's and other
  // processes' ephemeral sockets cannot take it meanwhile.
  const ports = new Map<TrunkName, number>();
  const held = new Map<TrunkName, dgram.Socket>();
  t.teardown(() => [...held.values()].forEach((s) => s.close()));
  for (const tr of TRUNKS) {
    for (let i = 0; i < 20 && !held.has(tr.name); i++) {
      const port = await freePort();
      const socket = dgram.createSocket('udp4');
      const bound = await new Promise<boolean>((resolve) => {
        socket.once('error', () => resolve(false));
        socket.bind(port, '127.0.0.1', () => resolve(true));
      });
      if (!bound) continue;
      ports.set(tr.name, port);
      held.set(tr.name, socket);
    }
  }
  const configFile = join(tmpdir(), `ferry-voice-sipp-${process.pid}-${Date.now()}.json`);
  const trunks = TRUNKS.map((tr) => ({
    name: tr.name,
    host: '127.0.0.1',
    port: ports.get(tr.name),
    transport: 'udp',
    username: 'username' in tr ? tr.username : null,
    password: 'password' in tr ? tr.password : null,
    destinationPrefixes: [tr.to],
    priority: 'priority' in tr ? tr.priority : 100,
    // No OPTIONS keep-alive: SIPp plays exactly one INVITE dialog and would count anything else as unexpected.
    optionsIntervalSeconds: 0,
  }));
  writeFileSync(configFile, JSON.stringify({ voice: { simulator: 'off', trunks } }));
  t.teardown(() => rmSync(configFile, { force: true }));
  const d = await startDaemon({
    FERRY_CONFIG: configFile,
    FERRY_VOICE_SIMULATOR: 'off',
    FERRY_VOICE_MEDIA_PORT_MIN: '45000',
    FERRY_VOICE_MEDIA_PORT_MAX: '45399',
  });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'voice-sipp');
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await d.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });
  const voice = d.daemon.modules.service<VoiceModuleService>('voice').voice;

  const sipp = async (t: { teardown(fn: () => unknown): void }, name: TrunkName): Promise<SippProcess> => {
    const tr = TRUNKS.find((x) => x.name === name)!;
    await new Promise<void>((resolve) => held.get(name)!.close(() => resolve()));
    held.delete(name);
    const p = runSipp({ scenario: scenario(tr.scenario), port: ports.get(name)! });
    t.teardown(() => p.kill());
    await p.ready;
    // ready also resolves when SIPp exited at once (its port taken meanwhile): say so now, not as a call timing out.
    const early = await Promise.race([p.done, new Promise<null>((r) => setTimeout(() => r(null), 200))]);
    if (early) throw new Error(`SIPp (${tr.scenario}) ended before the call: ${explain(early)}`);
    return p;
  };
  const place = async (body: Record<string, unknown>): Promise<string> => {
    const r = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { from: FROM, script: [{ pause: { seconds: 1 } }], ...body } });
    if (r.status !== 202) throw new Error(`POST /v1/voice/calls: ${r.status} ${r.text}`);
    return r.json.data.callId as string;
  };
  const get = async (id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}`, { token })).json.data;
  /** The call once final; past Ferry's own INVITE timeout (Timer B, 32 s), the peers' side is told as well. */
  const final = async (id: string, ...peers: SippProcess[]) => {
    try {
      return await until(() => get(id), (c) => FINAL.includes(c.status), 45_000);
    } catch (err) {
      for (const p of peers) p.kill();
      const seen = await Promise.all(peers.map((p) => p.done));
      throw new Error(`${(err as Error).message}\n${seen.map(explain).join('\n')}`);
    }
  };

  await t.test('digest: 401 with qop=auth, Ferry answers the challenge, verifyauth passes, the call completes', async (t) => {
    const peer = await sipp(t, 'digest');
    const id = await place({ to: '+14155550101' });
    const c = await final(id, peer);
    const r = await peer.done;
    t.equal(r.code, 0, 'SIPp verified the digest and the SDP offer (PCMU, PCMA, telephone-event), got ACK and BYE', { sipp: explain(r) });
    t.equal(c.status, 'completed', 'Ferry shows the call completed', { call: c });
    t.equal(c.sipCode, 200);
    t.equal(c.trunk, 'digest');
    t.same(c.history.map((h: { status: string }) => h.status), ['queued', 'initiated', 'in-progress', 'completed'], 'no ringing: SIPp answered at once');
    t.equal(c.history.at(-1).detail.by, 'ferry', 'Ferry hung up at the end of its script');
  });

  await t.test('digest: a wrong password is refused again, the call fails with SIP 401 kept', async (t) => {
    const peer = await sipp(t, 'wrong-password');
    const c = await final(await place({ to: '+14155550102' }), peer);
    const r = await peer.done;
    t.equal(r.code, 0, 'SIPp refused the retried INVITE with a second 401, ACKed', { sipp: explain(r) });
    t.equal(c.status, 'failed', 'Ferry shows the call failed', { call: c });
    t.equal(c.sipCode, 401);
    t.equal(c.answeredAt, null);
    t.equal(c.cost, 0, 'nothing billed');
  });

  await t.test('486: the call ends busy', async (t) => {
    const peer = await sipp(t, 'busy');
    const c = await final(await place({ to: '+14155550103' }), peer);
    const r = await peer.done;
    t.equal(r.code, 0, 'SIPp got the ACK for its 486', { sipp: explain(r) });
    t.equal(c.status, 'busy', 'Ferry shows the call busy', { call: c });
    t.equal(c.sipCode, 486);
  });

  await t.test('180 and no answer: Ferry CANCELs at the ring timeout, SIPp answers 487, Ferry ACKs: no-answer', async (t) => {
    const peer = await sipp(t, 'ring-timeout');
    const c = await final(await place({ to: '+14155550104', timeoutSeconds: 5 }), peer);
    const r = await peer.done;
    t.equal(r.code, 0, 'SIPp saw the CANCEL, sent 487 and got its ACK', { sipp: explain(r) });
    t.equal(c.status, 'no-answer', 'Ferry shows the call no-answer', { call: c });
    t.equal(c.sipCode, 487);
    t.match(c.error, { code: 'RING_TIMEOUT' });
    t.same(c.history.map((h: { status: string }) => h.status), ['queued', 'initiated', 'ringing', 'no-answer']);
  });

  await t.test('180, then POST /hangup while ringing: Ferry CANCELs, SIPp answers 487, Ferry ACKs: canceled', async (t) => {
    const peer = await sipp(t, 'ring-hangup');
    const id = await place({ to: '+14155550105', timeoutSeconds: 60 });
    await until(() => get(id), (c) => c.status === 'ringing' || FINAL.includes(c.status));
    const h = await call(d.api, 'POST', `/v1/voice/calls/${id}/hangup`, { token });
    t.equal(h.status, 202, h.text);
    const c = await final(id, peer);
    const r = await peer.done;
    t.equal(r.code, 0, 'SIPp saw the CANCEL, sent 487 and got its ACK', { sipp: explain(r) });
    t.equal(c.status, 'canceled', 'Ferry shows the call canceled', { call: c });
    t.equal(c.sipCode, 487);
    t.equal(c.hangupRequested, true);
  });

  await t.test('answered, then SIPp hangs up after 2 s: completed, by the remote, no error', async (t) => {
    const peer = await sipp(t, 'remote-bye');
    const c = await final(await place({ to: '+14155550106', script: [{ pause: { seconds: 30 } }] }), peer);
    const r = await peer.done;
    t.equal(r.code, 0, "Ferry answered SIPp's BYE with 200", { sipp: explain(r) });
    t.equal(c.status, 'completed', 'Ferry shows the call completed', { call: c });
    t.equal(c.sipCode, 200);
    t.equal(c.error, null, 'a hang-up by the far end is no error');
    t.same(c.history.map((h: { status: string }) => h.status), ['queued', 'initiated', 'ringing', 'in-progress', 'completed']);
    t.equal(c.history.at(-1).detail.by, 'remote');
  });

  await t.test('failover: the priority 1 trunk answers 503, the priority 2 trunk carries the call', async (t) => {
    const down = await sipp(t, 'down');
    const backup = await sipp(t, 'backup');
    const id = await place({ to: '+14155550107' });
    const c = await final(id, down, backup);
    const [rDown, rBackup] = [await down.done, await backup.done];
    t.equal(rDown.code, 0, 'the first trunk sent 503 and got its ACK', { sipp: explain(rDown) });
    t.equal(rBackup.code, 0, 'the second trunk checked the offer, answered and got ACK and BYE', { sipp: explain(rBackup) });
    t.equal(c.status, 'completed', 'Ferry shows the call completed', { call: c });
    t.equal(c.sipCode, 200);
    t.equal(c.trunk, 'backup');
    t.same((await voice.get(account.id, id)).trunksTried, ['down', 'backup'], 'both trunks tried, in priority order');
  });
});
