/**
 * What a call with an agent needs before it rings anyone: the agent version it was placed with (keys unsealed), its
 * first message already synthesised (so the caller hears it the moment they answer), a recogniser for its language,
 * and a brain. Failing here fails the call before dialling, with the reason, as a script's bad audio does.
 */
import { randomUUID } from 'node:crypto';
import { OpenAiChatModel, type ChatModel } from '../../../llm/index.js';
import { guardedFetch } from '../../../security/guarded-fetch.js';
import { GuardedHttpError, type GuardedHttp } from '../../../security/guarded-http.js';
import { signatureHeader } from '../../../security/standard-webhooks-signature.js';
import type { TargetGuard } from '../../../security/target-guard.js';
import { OpenAiTranscriptionRecognizer, PocketsphinxRecognizer, type SpeechRecognizer } from '../../../speech/index.js';
import { fetchPlayableAudio } from '../call-audio.js';
import type { Call } from '../call.js';
import type { AgentBrain } from './agent-brain.js';
import type { PlayFetcher } from './agent-conversation.js';
import type { AgentConfig, AgentTool, SttConfig } from './agent-config.js';
import type { AgentService } from './agent-service.js';
import type { LoadedAgent } from './agent-store.js';
import { fillVariables, type AgentCallActions, type ToolOutcome } from './agent-tools.js';
import { LlmBrain } from './llm-brain.js';

export interface PreparedAgent {
  agent: LoadedAgent;
  variables: Record<string, string>;
  firstMessage: Int16Array | null;
  recognizer: SpeechRecognizer;
  speak(text: string): Promise<Int16Array>;
  /** The brain for this call; tools act on the call through `actions`. */
  brain(actions: AgentCallActions): AgentBrain;
  /** Fetches audio the brain asks to play (a relay's `play`), through the SSRF guard. */
  fetchPlay: PlayFetcher;
}

/** One speech-to-text engine an agent may use. */
export interface RecognizerInfo {
  provider: 'pocketsphinx' | 'openai-compatible';
  offline: boolean;
  available: boolean;
  /** BCP 47 locales it serves here; null when the provider an agent configures decides. */
  locales: string[] | null;
  note: string;
}

export class AgentPreparationError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export interface AgentRuntimeOptions {
  agents: AgentService;
  speak: (say: { text: string; locale: string; voice?: string }) => Promise<Int16Array>;
  guard: TargetGuard;
  /** The guarded client webhook tools post through. */
  http: GuardedHttp;
  /** The account's signing secret for webhook tools (the voice callback secret: one secret per account for voice). */
  signingSecret: (accountId: string) => string;
  /** Builds the relay brain (the customer's own model over a WebSocket); null while this instance cannot. */
  relayBrain?: (agent: LoadedAgent, actions: AgentCallActions) => AgentBrain;
  /** Bounds of one audio file a relay asks to play (voice.playback); default that configuration's defaults. */
  playback?: { maxBytes: number; maxSeconds: number };
}

/** voice.playback's defaults. */
const PLAYBACK_DEFAULTS = { maxBytes: 10_485_760, maxSeconds: 600 };
/** Fetching one file a relay asks to play (as a script's files are fetched). */
const PLAY_FETCH_TIMEOUT_MS = 15_000;

const MAX_WEBHOOK_ANSWER_BYTES = 16 * 1024;

export class AgentRuntime {
  // One offline recogniser per process: it bounds its own concurrency.
  private pocketsphinx: PocketsphinxRecognizer | null = null;
  /**
   * The fetch of the agent's own model and speech-to-text provider: the SSRF guard at every request, connecting only
   * to the addresses it checked (the check before dialling alone would leave the SDK's own DNS lookup to a name that
   * may point inside by the first turn). Connections are kept a few seconds between turns, as Node's default agent does.
   */
  private providerFetch: typeof fetch | null = null;

  constructor(private readonly o: AgentRuntimeOptions) {}

  /** The speech-to-text engines an agent may name, with the locales each serves here (GET /v1/voice/agents/recognizers). */
  async recognizers(): Promise<RecognizerInfo[]> {
    this.pocketsphinx ??= new PocketsphinxRecognizer();
    const offline = this.pocketsphinx;
    const available = await offline.available();
    return [
      { provider: 'pocketsphinx', offline: true, available, locales: available ? await offline.locales() : [], note: available ? 'rough on 8 kHz telephone audio: for demos and laptops' : 'not installed here (Debian packages pocketsphinx and pocketsphinx-en-us)' },
      { provider: 'openai-compatible', offline: false, available: true, locales: null, note: "the agent's own provider (stt.baseUrl, stt.model) hears the agent's language; which it serves is the provider's to say" },
    ];
  }

  async prepare(call: Call): Promise<PreparedAgent> {
    const ref = call.agent!;
    const agent = await this.o.agents.load(call.accountId, ref.id, ref.version).catch(() => {
      throw new AgentPreparationError('AGENT_NOT_FOUND', `agent ${ref.id} version ${ref.version} is gone`);
    });
    const config = agent.config;
    const variables = { ...config.variables, ...ref.variables };
    const voice = { locale: config.voice.locale, ...(config.voice.voiceId ? { voice: config.voice.voiceId } : {}) };
    const speak = (text: string) => this.o.speak({ text, ...voice });
    const recognizer = this.recognizer(config.stt, config.language);
    if (!(await recognizer.available())) throw new AgentPreparationError('STT_UNAVAILABLE', `speech-to-text (${config.stt.provider}) cannot run on this server`);
    if (config.stt.provider === 'openai-compatible') {
      const checked = await this.o.guard.check(config.stt.baseUrl ?? '');
      if (!checked.ok) throw new AgentPreparationError('STT_URL_REFUSED', `stt.baseUrl: ${checked.reason}`);
    }
    if (config.llm) {
      const checked = await this.o.guard.check(config.llm.baseUrl);
      if (!checked.ok) throw new AgentPreparationError('LLM_URL_REFUSED', `llm.baseUrl: ${checked.reason}`);
      // The model's SDK loads now, while the call rings, not on the caller's first turn (~0.1–0.4 s of CPU once).
      await import('openai');
    } else if (!this.o.relayBrain) throw new AgentPreparationError('RELAY_UNAVAILABLE', 'agents with a relay cannot run on this server yet');
    let firstMessage: Int16Array | null = null;
    if (config.firstMessage) {
      try {
        firstMessage = await speak(fillVariables(config.firstMessage, variables));
      } catch (err) {
        throw new AgentPreparationError('TTS_FAILED', `the first message cannot be spoken: ${(err as Error).message}`);
      }
    }
    return {
      agent,
      variables,
      firstMessage,
      recognizer,
      speak,
      brain: (actions) => (config.llm ? new LlmBrain({ model: this.model(config), config, actions }) : this.o.relayBrain!(agent, actions)),
      fetchPlay: (url, signal) => this.fetchPlay(url, signal),
    };
  }

  private recognizer(stt: SttConfig, language: string): SpeechRecognizer {
    if (stt.provider === 'openai-compatible') {
      // The agent's own provider: it hears the agent's language (the operator's catalogue does not apply to it).
      return new OpenAiTranscriptionRecognizer({ id: 'stt', baseUrl: stt.baseUrl ?? '', apiKey: stt.apiKey ?? '', model: stt.model ?? 'whisper-1', locales: [language], fetch: this.providers() });
    }
    this.pocketsphinx ??= new PocketsphinxRecognizer();
    return this.pocketsphinx;
  }

  private model(config: AgentConfig): ChatModel {
    const llm = config.llm!;
    return new OpenAiChatModel({
      baseUrl: llm.baseUrl,
      apiKey: llm.apiKey ?? '',
      model: llm.model,
      ...(llm.temperature === null ? {} : { temperature: llm.temperature }),
      ...(llm.maxTokens === null ? {} : { maxTokens: llm.maxTokens }),
      fetch: this.providers(),
    });
  }

  /** A relay's `play` source, through the guarded client as a script's `play` (call-audio). */
  private fetchPlay(url: string, signal: AbortSignal): Promise<Int16Array> {
    return fetchPlayableAudio(url, { http: this.o.http, ...(this.o.playback ?? PLAYBACK_DEFAULTS), timeoutMs: PLAY_FETCH_TIMEOUT_MS, signal });
  }

  private providers(): typeof fetch {
    this.providerFetch ??= guardedFetch(this.o.guard.client({ agent: { keepAlive: true, timeout: 5_000, scheduling: 'lifo' } }));
    return this.providerFetch;
  }

  /**
   * A webhook tool: the model's arguments POSTed to the customer's URL (SSRF guard, signed like webhooks, bounded in
   * time and size); the answer's JSON (or text) goes back to the model. Failures are answers the model can speak about.
   */
  async webhook(accountId: string, callId: string, tool: Extract<AgentTool, { type: 'webhook' }>, args: Record<string, unknown>): Promise<ToolOutcome> {
    const id = `tool_${randomUUID()}`;
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: 'voice.agent.tool', tool: tool.name, callId, arguments: args });
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Ferry-Voice',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([this.o.signingSecret(accountId)], id, timestamp, body),
    };
    try {
      const res = await this.o.http.request(tool.url, { method: 'POST', headers, body, timeoutMs: tool.timeoutMs, maxBytes: MAX_WEBHOOK_ANSWER_BYTES });
      const text = res.body.toString('utf8');
      let answer: unknown = text;
      try {
        answer = JSON.parse(text);
      } catch {
        // plain text is a fine answer for a model
      }
      if (res.status >= 200 && res.status < 300) return { ok: true, result: answer };
      return { ok: false, result: { error: `the tool's server answered ${res.status}`, answer } };
    } catch (err) {
      if (err instanceof GuardedHttpError) return { ok: false, result: { error: err.kind === 'TIMEOUT' ? `no answer within ${tool.timeoutMs} ms` : `the tool could not be reached (${err.kind})` } };
      throw err;
    }
  }
}
