import { ApiError } from '../../../http/errors.js';
import type { SpeechVoice } from '../../../speech/index.js';
import { agentInvalid, normaliseAgent, patchedInput, type AgentConfig, type AgentInput, type AgentRules } from './agent-config.js';
import type { AgentRecord, AgentStore, LoadedAgent } from './agent-store.js';

/** Tries a PATCH makes when other changes to the same agent keep coming first. */
const PATCH_ATTEMPTS = 3;

const notFound = (agentId: string) => new ApiError('VOICE_AGENT_NOT_FOUND', { data: { agentId } });

/**
 * The API side of voice agents: a create or a change is normalised (agent-config.ts), its voice checked against the
 * speech catalogue, and stored as a new version. Reading never shows a key; `load` (the call loop's) does.
 */
export class AgentService {
  constructor(
    private readonly o: {
      store: AgentStore;
      rules: AgentRules;
      /** The voice a locale and voice id resolve to (throws VOICE_NOT_AVAILABLE when no engine has one). */
      resolveVoice: (voice: { locale: string; voiceId: string | null }) => Promise<SpeechVoice>;
    },
  ) {}

  async create(accountId: string, input: AgentInput): Promise<AgentRecord> {
    const config = await this.checked(input);
    return this.o.store.create(accountId, config);
  }

  /** A PATCH (a JSON merge patch onto the current version) as the next version. */
  async update(accountId: string, agentId: string, patch: AgentInput): Promise<AgentRecord> {
    for (let attempt = 0; attempt < PATCH_ATTEMPTS; attempt++) {
      const current = await this.o.store.loadVersion(accountId, agentId).catch((err: unknown) => {
        throw err instanceof ApiError ? notFound(agentId) : err;
      });
      const config = await this.checked(patchedInput(current.config, patch));
      const saved = await this.o.store.addVersion(accountId, agentId, current.version, config);
      if (saved) return saved;
      if (!(await this.o.store.exists(accountId, agentId))) throw notFound(agentId);
    }
    throw new ApiError('CONFLICT', { message: `Voice agent ${agentId} is being changed by other requests at the same time; retry`, data: { agentId } });
  }

  async get(accountId: string, agentId: string, version?: number): Promise<AgentRecord> {
    const found = await this.o.store.get(accountId, agentId, version);
    if (found) return found;
    const agent = version === undefined ? null : await this.o.store.exists(accountId, agentId);
    if (!agent) throw notFound(agentId);
    throw new ApiError('VOICE_AGENT_NOT_FOUND', {
      message: `Voice agent ${agentId} has no version ${version}: its versions are 1 to ${agent.currentVersion}`,
      data: { agentId, version, currentVersion: agent.currentVersion },
    });
  }

  list(accountId: string, filter: { name?: string; before?: string }, limit: number): Promise<AgentRecord[]> {
    return this.o.store.list(accountId, filter, limit);
  }

  async versions(accountId: string, agentId: string, before: number | undefined, limit: number): Promise<AgentRecord[]> {
    const found = await this.o.store.versions(accountId, agentId, before, limit);
    if (!found) throw notFound(agentId);
    return found;
  }

  async remove(accountId: string, agentId: string): Promise<void> {
    if (!(await this.o.store.softDelete(accountId, agentId))) throw notFound(agentId);
  }

  /** For the call loop: a version's whole configuration, keys unsealed (AgentStore.loadVersion). */
  load(accountId: string, agentId: string, version?: number): Promise<LoadedAgent> {
    return this.o.store.loadVersion(accountId, agentId, version);
  }

  /** The normalised configuration, its voice found in the catalogue and speaking the agent's locale. */
  private async checked(input: AgentInput): Promise<AgentConfig> {
    const config = normaliseAgent(input, this.o.rules);
    const voice = await this.o.resolveVoice(config.voice);
    if (config.voice.voiceId) {
      const language = (l: string) => l.toLowerCase().split('-')[0];
      const wanted = language(config.voice.locale);
      const serves = [voice.locale, ...voice.alsoServes.map((s) => s.locale)].some((l) => language(l) === wanted);
      if (!serves) throw agentInvalid('voice.voiceId', `voice ${voice.id} speaks ${voice.locale}, not ${config.voice.locale}: choose one of that locale (GET /v1/voice/voices) or leave voiceId out`);
    }
    return config;
  }
}
