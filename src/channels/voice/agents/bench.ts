/**
 * Voice agents: time from the caller's end of speech to the agent's first audio (p50/p99), the model answering at once.
 *
 *   npm run bench -- voice-agent [--calls 20] [--concurrency 4] [--stt scripted|pocketsphinx]
 *
 * A daemon in this process (embedded backend, its trunk simulator on) with an agent whose model is a local
 * OpenAI-compatible stand-in answering at once, and whose speech-to-text is a stand-in of an OpenAI-compatible
 * provider answering at once with a scripted transcript (--stt scripted: what is measured is Ferry's own share) or
 * the offline pocketsphinx engine (--stt pocketsphinx: what a laptop install gets). Each call: answered, the first
 * message played, the trunk plays the caller's line (espeak-ng), the agent answers; the turn's latency is read from
 * the transcript: speech-to-text, model to first sentence, synthesis of it, and the total from the moment the voice
 * activity detector ended the utterance (after its 600 ms of silence, which is a setting, not work) to the first
 * audio queued for sending.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHANNEL_MODULES } from '../../index.js';
import { loadConfig } from '../../../config/load.js';
import { Daemon } from '../../../daemon.js';
import { createLogger } from '../../../log.js';
import { OpenAiChatSimulator } from '../../../sim/llm/openai-chat-simulator.js';
import { OpenAiTranscriptionSimulator } from '../../../sim/speech/openai-transcription-simulator.js';
import { EspeakSynthesizer } from '../../../speech/espeak-synthesizer.js';
import type { VoiceModuleService } from '../index.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number, min: number, max: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(argv[i + 1]) : dflt;
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`--${name} must be an integer in ${min}..${max}`);
  return v;
};
if (argv.includes('--help')) {
  process.stdout.write('usage: npm run bench -- voice-agent [--calls 20 (≤ 200)] [--concurrency 4 (≤ 20)] [--stt scripted|pocketsphinx]\n');
  process.exit(0);
}
const CALLS = flag('calls', 20, 1, 200);
const CONCURRENCY = flag('concurrency', 4, 1, 20);
const STT = argv.includes('--stt') ? argv[argv.indexOf('--stt') + 1] : 'scripted';
if (STT !== 'scripted' && STT !== 'pocketsphinx') throw new Error('--stt scripted|pocketsphinx');
const FROM = '+233200000101';
const LINE = 'I need some help with my booking please';

// Each answer differs, so each is synthesised (the speech cache would otherwise answer from the second call on).
let answers = 0;
const model = new OpenAiChatSimulator({ rules: [{ match: /./, reply: () => ({ text: `Certainly, booking number ${++answers}. Which date is it for?` }) }] });
await model.start();
const stt = new OpenAiTranscriptionSimulator();
await stt.start({ apiKey: 'bench-stt-key' });
const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-agent-'));
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_SHORTLINK_PORT: '0',
  FERRY_LOG_LEVEL: 'warn',
  FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
  FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
  FERRY_VOICE_SIMULATOR: 'on',
  FERRY_VOICE_MEDIA_PORT_MIN: '48000',
  FERRY_VOICE_MEDIA_PORT_MAX: '48999',
  FERRY_VOICE_MAX_CONCURRENT_CALLS_PER_ACCOUNT: '1000',
};
const daemon = await Daemon.start(loadConfig({ env, modules: CHANNEL_MODULES }).config, createLogger('warn'));
const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

try {
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const request = async (base: string, auth: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, { method, headers: { authorization: auth, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const json = (await res.json()) as { success: boolean; data: Record<string, unknown>; code: string };
    if (!json.success) throw new Error(`${method} ${path}: ${json.code}`);
    return json.data;
  };
  const admin = (method: string, path: string, body?: unknown) => request(daemon.addresses.admin, `Bearer ${adminToken}`, method, path, body);
  const name = `agentbench${process.pid}`;
  const account = await admin('POST', '/admin/accounts', { name });
  const key = await admin('POST', '/admin/keys', { account: name, scopes: 'all' });
  await admin('POST', `/admin/accounts/${String(account.id)}/numbers`, { number: FROM });
  await admin('POST', `/admin/accounts/${String(account.id)}/credit`, { amount: '1000' });
  const api = (method: string, path: string, body?: unknown) => request(daemon.addresses.http, `Basic ${String(key.token)}`, method, path, body);
  const agent = await api('POST', '/v1/voice/agents', {
    name: 'Bench desk',
    systemPrompt: 'You help callers with their bookings. Be brief.',
    firstMessage: 'Hello, how can I help?',
    voice: { locale: 'en-US' },
    language: 'en-US',
    llm: { provider: 'openai-compatible', model: 'bench', baseUrl: model.baseUrl, apiKey: 'bench-llm-key' },
    stt: STT === 'scripted' ? { provider: 'openai-compatible', model: 'whisper-1', baseUrl: stt.baseUrl, apiKey: 'bench-stt-key' } : { provider: 'pocketsphinx' },
    silenceTimeoutSeconds: 30,
  });
  const caller = await new EspeakSynthesizer().synthesize({ text: LINE, voice: 'en-US', rate: 140 });
  const voice = daemon.modules.service<VoiceModuleService>('voice');

  type Latency = { sttMs: number; brainMs: number; ttsMs: number; totalMs: number };
  const turns: Latency[] = [];
  const failures: string[] = [];
  let next = 0;
  const runOne = async (n: number): Promise<void> => {
    stt.script(LINE);
    // Numbers ending in 1: the trunk simulator's plain answer (no busy, tone or DTMF of its number plan).
    const to = `+1415555${2001 + n * 10}`;
    const placed = await api('POST', '/v1/voice/calls', { to, from: FROM, agentId: agent.agentId, timeLimit: 60 });
    const id = String(placed.callId);
    const deadline = Date.now() + 60_000;
    let played = false;
    let measured = false;
    while (Date.now() < deadline) {
      const tr = (await api('GET', `/v1/voice/calls/${id}/transcript`)) as { lines: Array<{ role: string; latency?: Latency }> };
      const turn = tr.lines.find((l) => l.latency);
      if (turn) {
        turns.push(turn.latency!);
        measured = true;
        break;
      }
      if (!played && tr.lines.some((l) => l.role === 'agent')) {
        const sim = voice.simulator()?.calls().find((c) => c.to.endsWith(to.slice(1)) && c.state === 'answered');
        if (sim && voice.simulator()!.play(sim.id, caller)) played = true;
      }
      await pause(50);
    }
    if (!measured) failures.push(id);
    await api('POST', `/v1/voice/calls/${id}/hangup`).catch(() => undefined);
  };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CALLS) await runOne(next++);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const sorted = (pick: (l: Latency) => number) => turns.map(pick).sort((a, b) => a - b);
  const row = (label: string, pick: (l: Latency) => number) => {
    const s = sorted(pick);
    return `  ${label.padEnd(34)} p50 ${String(percentile(s, 50)).padStart(5)} ms   p99 ${String(percentile(s, 99)).padStart(5)} ms`;
  };
  const own = (l: Latency) => l.totalMs - (STT === 'scripted' ? 0 : l.sttMs);
  process.stdout.write(
    [
      `voice-agent: ${turns.length} turns of ${CALLS} calls, ${CONCURRENCY} at once, speech-to-text ${STT}, in ${seconds.toFixed(1)} s` +
        (failures.length ? ` (${failures.length} without a measured turn)` : ''),
      row('speech-to-text', (l) => l.sttMs),
      row('model to first sentence', (l) => l.brainMs),
      row('synthesis of it (espeak-ng)', (l) => l.ttsMs),
      row('end of speech to first audio', (l) => l.totalMs),
      STT === 'pocketsphinx' ? row("the same without speech-to-text", own) : '',
      "  (the detector waits 600 ms of silence before the utterance ends; that wait is a setting, not in these figures)",
      '',
    ]
      .filter(Boolean)
      .join('\n'),
  );
} finally {
  await daemon.stop();
  await model.stop();
  await stt.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
