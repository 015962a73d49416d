import { randomUUID } from 'node:crypto';
import type { Server as HttpServer } from 'node:http';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { swapLeaseHolder } from '../../platform/job-lease.js';
import type { ChannelModule } from '../../platform/channel-module.js';
import type { SmsGatewayService } from '../../messaging/sms-gateway-service.js';
import { IdempotencyStore } from '../../http/idempotency.js';
import { MediaEngine } from '../../rtp/index.js';
import { UserAgent } from '../../sip/index.js';
import { simAdminRoutes } from '../../sim/voice/sim-admin-routes.js';
import { voiceSimulatorCli } from '../../sim/voice/sim-cli.js';
import { VoiceTrunkSimulator } from '../../sim/voice/trunk-simulator.js';
import { BrowserPhone } from './browser/browser-phone.js';
import { DialerPresence, INSTANCE_HEARTBEAT_MS } from './browser/dialer-presence.js';
import { InboundCalls } from './inbound/inbound-calls.js';
import { NumberRouteStore } from './inbound/number-route-store.js';
import { numberRoutes } from './inbound/number-routes.js';
import { dialerRoutes } from './browser/dialer-routes.js';
import { DialerTokens } from './browser/dialer-token.js';
import { agentRoutes } from './agents/agent-routes.js';
import { AGENT_MCP_TOOLS } from './agents/agent-mcp-tools.js';
import { AgentService } from './agents/agent-service.js';
import { AgentStore } from './agents/agent-store.js';
import { AgentRuntime } from './agents/agent-runtime.js';
import { TranscriptStore } from './agents/transcript-store.js';
import { RelayBrain, relayTargetCheck } from './agents/relay/index.js';
import { prepareAudio } from './call-audio.js';
import { VoicePrices } from './call-pricing.js';
import { CallRecorder, VOICE_CALLBACK_MACHINE } from './call-recorder.js';
import { CallStore } from './call-store.js';
import { voiceConfigSchema, type VoiceConfig } from './config.js';
import { Dialer } from './dialer.js';
import { VOICE_ERRORS } from './errors.js';
import { OrphanSweep } from './orphan-sweep.js';
import { VOICE_SCOPES } from './scopes.js';
import { callbackSigningSecret, StatusCallbackAdapter } from './status-callbacks.js';
import { voiceStorage } from './storage.js';
import { trunkAdminRoutes, voiceCli } from './trunk-admin.js';
import { TrunkRegistry } from './trunk-registry.js';
import { VOICE_EVENTS } from './voice-events.js';
import { VOICE_MCP_TOOLS } from './voice-mcp-tools.js';
import { voiceRoutes } from './voice-routes.js';
import { VoiceService } from './voice-service.js';
import { VoiceSpeech } from './voice-speech.js';

export type { VoiceService } from './voice-service.js';
export type { AgentService } from './agents/agent-service.js';
export type { AgentConfig } from './agents/agent-config.js';
export type { LoadedAgent } from './agents/agent-store.js';

/** What the module exposes (tests, the bench). */
export interface VoiceModuleService {
  voice: VoiceService;
  /** AI voice agents: their versions, and `load` (keys unsealed) for the call loop. */
  agents: AgentService;
  trunks: TrunkRegistry;
  /** The embedded trunk simulator, when it runs in this process (media role). */
  simulator: () => VoiceTrunkSimulator | null;
  /** The dialer, in a process running the media role. */
  dialer: () => Dialer | null;
  /** The browser dialer's exchange, in a process running the api and media roles. */
  browserPhone: () => BrowserPhone | null;
  /** The port the SIP user agent listens on (UDP and TCP; the one it picked when `voice.sip.port` is 0), once started. */
  sipPort: () => number | null;
}

export const SIMULATOR_WARNING = 'voice: the embedded SIP trunk simulator stands in for a real trunk (voice.simulator); calls reach no telephone';

/**
 * Voice calls (Beta): outbound calls through SIP trunks with Ferry's own SIP and RTP stacks, text-to-speech
 * (espeak-ng on this server, OpenAI-compatible providers for other locales) and WAV playback, DTMF gathering, status
 * events and signed status callbacks, credit held per call and settled per second. Calls are placed by the API role
 * and carried by an instance running the media role, which owns each call while it lasts (docs/voice.md).
 */
export const voiceModule: ChannelModule<VoiceModuleService> = {
  name: 'voice',
  maturity: 'beta',
  tag: { name: 'voice', description: 'Voice calls (Beta): outbound calls over SIP trunks with text-to-speech, audio playback, DTMF input and status callbacks' },
  scopes: VOICE_SCOPES,
  config: { key: 'voice', schema: voiceConfigSchema },
  errors: VOICE_ERRORS,
  dependsOn: ['webhooks', 'sms'],
  events: VOICE_EVENTS,
  apiPaths: ['/dialer'],
  ...voiceStorage,
  async create(ctx) {
    const c = ctx.section<VoiceConfig>();
    const store = new CallStore(ctx.db);
    const prices = new VoicePrices(c.prices, { minimumSeconds: c.prices.minimumSeconds, incrementSeconds: c.prices.incrementSeconds });
    const trunks = new TrunkRegistry({ db: ctx.db, key: ctx.deriveKey('voice-trunks'), fromConfig: c.trunks, log: ctx.log });
    const recorder = new CallRecorder({ db: ctx.db, store, events: ctx.events, holds: ctx.holds, pipeline: () => ctx.outbound.pipeline, increment: prices.increment });
    const callbackKey = ctx.deriveKey('voice-callbacks');
    const callbacks = new StatusCallbackAdapter({ guard: ctx.http, signingKey: callbackKey, timeoutMs: 10_000 });
    ctx.outbound.product('voice', { machine: VOICE_CALLBACK_MACHINE, deadlineMs: 24 * 3_600_000, backoff: { baseMs: 2_000, maxMs: 10 * 60_000 } });
    ctx.outbound.provider({ adapter: callbacks, maxConcurrency: 32, sendTimeoutMs: 15_000, leaseMs: 60_000 });
    const speech = new VoiceSpeech({ config: c.tts, cacheDir: join(ctx.config.dataDir, 'voice-tts-cache'), log: ctx.log });
    const media = ctx.roles.has('media');
    const simulatorOn = c.simulator === 'on' || (c.simulator === 'auto' && !c.trunks.length && ctx.db.kind !== 'postgres');
    let simulator: VoiceTrunkSimulator | null = null;
    let dialer: Dialer | null = null;
    let ua: UserAgent | null = null;
    let engine: MediaEngine | null = null;
    let phone: BrowserPhone | null = null;
    let apiServer: HttpServer | null = null;
    const dialerTokens = new DialerTokens(ctx.deriveKey('voice-dialer'));
    const unsubscribe: Array<() => Promise<void>> = [];
    const instanceId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    // With Redis there may be several instances: a browser registered with one is found by the others (a call for it
    // is redirected there). Embedded, this instance is the only one and keeps its registrations to itself.
    const presenceRedis = media ? ctx.redis.client('dialer-presence') : null;
    const presence = presenceRedis
      ? new DialerPresence({ redis: presenceRedis, keyPrefix: ctx.redis.keyPrefix, instanceId, sip: () => ({ host: ua!.host, port: ua!.port }), log: ctx.log })
      : null;
    const agents = new AgentService({
      store: new AgentStore({ db: ctx.db, key: ctx.deriveKey('voice-agents') }),
      rules: { maxDurationSeconds: c.maxDurationSeconds, httpsOnly: ctx.http.resolver.policy.httpsOnly, defaultLocale: c.tts.defaultLocale },
      resolveVoice: async (v) => (await speech.resolve({ locale: v.locale, voice: v.voiceId ?? undefined })).voice,
    });
    const transcripts = new TranscriptStore({ db: ctx.db, events: ctx.events });
    const numberRouteStore = new NumberRouteStore({ db: ctx.db, accounts: ctx.accounts });
    const service = new VoiceService({
      db: ctx.db,
      store,
      recorder,
      holds: ctx.holds,
      accounts: ctx.accounts,
      prices,
      guard: ctx.http,
      config: c,
      checkVoice: async (say) => void (await speech.resolve(say)),
      wakeDialer: () => {
        dialer?.wake();
        void ctx.pubsub.publish('due', '').catch(() => undefined);
      },
      notifyHangup: (id) => {
        dialer?.hangup(id);
        void ctx.pubsub.publish('hangup', id).catch(() => undefined);
      },
      agentVersion: async (accountId, agentId) => (await agents.get(accountId, agentId)).currentVersion,
    });
    const leaseMs = c.ownerLeaseSeconds * 1000;
    const sweep = new OrphanSweep({ store, recorder, leaseMs, log: ctx.log });
    const guarded = ctx.http.client({ agent: { keepAlive: true, maxSockets: 32 } });
    const idempotency = new IdempotencyStore(ctx.db);
    const runtime = new AgentRuntime({
      agents,
      speak: (say) => speech.synthesize(say),
      guard: ctx.http,
      http: guarded,
      playback: c.playback,
      signingSecret: (accountId) => callbackSigningSecret(callbackKey, accountId),
      relayBrain: (agent) =>
        new RelayBrain({
          url: agent.config.relay!.url,
          signingSecrets: [callbackSigningSecret(callbackKey, agent.accountId)],
          checkTarget: relayTargetCheck(ctx.http.resolver),
          allowPlainHttp: !ctx.http.resolver.policy.httpsOnly,
          log: ctx.log,
        }),
    });
    const sms = ctx.use<SmsGatewayService>('sms');
    return {
      service: { voice: service, agents, trunks, simulator: () => simulator, dialer: () => dialer, browserPhone: () => phone, sipPort: () => ua?.port ?? null },
      mcpTools: [...VOICE_MCP_TOOLS, ...AGENT_MCP_TOOLS],
      async routes(app) {
        await app.register(voiceRoutes, { service, idempotency, voices: () => speech.voices(), callbackSecret: (accountId) => callbackSigningSecret(callbackKey, accountId), transcript: (id) => transcripts.list(id) });
        await app.register(agentRoutes, { agents, idempotency, recognizers: () => runtime.recognizers() });
        await app.register(numberRoutes, { routes: numberRouteStore, agents, accounts: ctx.accounts });
        await app.register(dialerRoutes, { tokens: dialerTokens, accounts: ctx.accounts, maxTokenSeconds: c.dialer.maxTokenSeconds, available: () => phone !== null });
        // Browsers reach the dialer's SIP over WebSocket on this listener (attached once the media role has started).
        apiServer = app.server;
        phone?.attach(apiServer);
      },
      async adminRoutes(app) {
        await app.register(trunkAdminRoutes, { trunks });
        await app.register(simAdminRoutes, { simulator: () => simulator });
      },
      async start() {
        await trunks.refresh();
        if (!media) return;
        ua = await UserAgent.create({ host: c.sip.host, port: c.sip.port, advertisedHost: c.sip.advertisedHost ?? undefined, userAgent: 'Ferry' });
        ua.on('warning', (err) => ctx.log.debug({ err: err.message }, 'voice: SIP warning'));
        await presence?.connect();
        // With the embedded trunk simulator, Ferry's calls take the lower half of the RTP ports and the simulator the upper.
        const half = Math.floor((c.media.portMax - c.media.portMin) / 2);
        const ours = simulatorOn ? { min: c.media.portMin, max: c.media.portMin + half } : { min: c.media.portMin, max: c.media.portMax };
        let starting: Promise<MediaEngine> | null = null;
        // A start that failed is tried again by the next call rather than cached.
        const mediaEngine = () =>
          (starting ??= MediaEngine.start({ workers: c.media.workers, portRange: ours, host: c.sip.host }).then(
            (e) => (engine = e),
            (err: unknown) => {
              starting = null;
              throw err;
            },
          ));
        dialer = new Dialer({
          db: ctx.db,
          store,
          recorder,
          trunks,
          ua,
          media: mediaEngine,
          beforeFirstCall: async () => {
            if (!simulatorOn) return;
            simulator = new VoiceTrunkSimulator();
            await simulator.start({ host: '127.0.0.1', port: 0, transport: 'udp', mediaPortRange: { min: c.media.portMin + half + 1, max: c.media.portMax } });
            trunks.addSimulated({ name: 'simulator', host: '127.0.0.1', port: simulator.port, transport: 'udp', username: null, password: null, fromDomain: null, callerIdPrefixes: [], destinationPrefixes: [], priority: 1000, maxCallsPerSecond: 1000, maxConcurrentCalls: 100_000, optionsIntervalSeconds: 0 });
            ctx.warn(SIMULATOR_WARNING);
          },
          throttle: ctx.backends.throttle,
          config: c,
          instanceId,
          mediaHost: c.sip.advertisedHost ?? c.sip.host,
          log: ctx.log,
          prepare: (steps) => prepareAudio(steps, { speech: (say) => speech.synthesize(say), http: guarded, maxBytes: c.playback.maxBytes, maxSeconds: c.playback.maxSeconds, timeoutMs: 15_000 }),
          agent: async (call) => ({
            prepared: await runtime.prepare(call),
            record: (seq, entry) => transcripts.append(call, seq, entry),
            webhook: (tool, args) => runtime.webhook(call.accountId, call.id, tool, args),
            sendSms: async (tool, message) => {
              const accepted = await sms.gateway.sms.submit({ accountId: call.accountId, ingress: 'rest', source: tool.from ?? '+' + call.from, destination: call.to, destTon: 1, text: message, reference: call.id });
              return { ok: true, result: { sent: true, messageId: accepted.messageId } };
            },
          }),
        });
        // An earlier life of this daemon (same data folder) left its calls behind: end them now, not a lease later, at
        // its last renewal (moving their claims to lapse now instead would lose that time: it is the claim less a lease).
        const previous = swapLeaseHolder(ctx.config.dataDir, instanceId, 'voice-calls.holder');
        if (previous) while ((await sweep.runOnce(previous)) >= 100);
        unsubscribe.push(await ctx.pubsub.subscribe('due', () => dialer?.wake()));
        unsubscribe.push(await ctx.pubsub.subscribe('hangup', (id) => dialer?.hangup(id)));
        dialer.start();
        const inbound = new InboundCalls({ trunks, routes: numberRouteStore, voice: service, dialer, browsers: () => phone, presence, log: ctx.log, claimMs: leaseMs });
        // Calls from the trunks to numbers routed to an agent; INVITEs over a browser's connection are dialer calls.
        ua.onInvite((call) => void inbound.answer(call));
        if (c.dialer.enabled && ctx.roles.has('api')) {
          phone = new BrowserPhone({
            ua,
            tokens: dialerTokens,
            voice: service,
            dialer,
            log: ctx.log,
            webrtcHost: c.dialer.webrtcHost ?? c.sip.advertisedHost ?? c.sip.host,
            iceServers: c.dialer.iceServers,
            portRange: { min: c.dialer.portMin, max: c.dialer.portMax },
            trunkHost: c.sip.host,
            claimMs: leaseMs,
            presence,
          });
          const exchange = phone;
          ua.onInvite((call) => void (call.source.flow !== undefined ? exchange.invite(call) : inbound.answer(call)));
          if (apiServer) phone.attach(apiServer);
        }
        ctx.log.info({ sip: `${ua.host}:${ua.port}`, simulator: simulatorOn }, 'voice: SIP user agent started');
      },
      async stop() {
        // Other instances stop sending this one's browsers' calls here before its SIP port closes.
        await presence?.stop(phone?.held() ?? []);
        for (const u of unsubscribe.splice(0)) await u().catch(() => undefined);
        await dialer?.stop();
        for (const call of phone?.calls ?? []) await call.close().catch(() => undefined);
        phone = null;
        await ua?.close();
        await engine?.close();
        await simulator?.stop();
        if (simulator) ctx.unwarn(SIMULATOR_WARNING);
        callbacks.close();
        guarded.close();
      },
      jobs: [
        { name: 'voice.orphans', everyMs: 5_000, scope: 'cluster', roles: ['media'], run: () => sweep.runOnce() },
        { name: 'voice.trunks-refresh', everyMs: 10_000, scope: 'instance', roles: ['media', 'api'], run: () => trunks.refresh() },
        {
          name: 'voice.trunk-keepalive',
          everyMs: 30_000,
          scope: 'instance',
          roles: ['media'],
          run: async () => {
            if (!ua) return;
            for (const t of trunks.list()) {
              if (!t.optionsIntervalSeconds) continue;
              const answered = await ua.options({ host: t.host, port: t.port, transport: t.transport }).then(() => true, () => false);
              trunks.markHealth(t.name, answered);
            }
          },
        },
        // Keeps this instance counted as running, so other instances redirect calls to its browsers (with Redis only).
        ...(presence ? [{ name: 'voice.dialer-presence', everyMs: INSTANCE_HEARTBEAT_MS, scope: 'instance' as const, roles: ['media' as const], run: () => presence.heartbeat() }] : []),
      ],
    };
  },
  cli: voiceCli,
  simulators: [{ name: 'voice', description: 'a SIP trunk simulator: answers, rings out, busy or no-answer by number, records what it hears, plays DTMF back', cli: voiceSimulatorCli }],
};
