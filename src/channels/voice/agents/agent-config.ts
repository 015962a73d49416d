import AjvModule from 'ajv';
import { ApiError, type FieldError } from '../../../http/errors.js';

/**
 * An AI voice agent's configuration: its types, and the rules a request schema cannot state (agent-schemas.ts states
 * the shapes). `normaliseAgent` turns what a request gave (a create body, or the stored agent with a PATCH merged in)
 * into the complete configuration a version stores: defaults filled in, every problem named by its field
 * (VOICE_AGENT_INVALID). Secrets (`llm.apiKey`, `stt.apiKey`) are plain here; the store seals them.
 */

export const TOOL_NAME_PATTERN = '^[a-zA-Z0-9_-]{1,64}$';
export const VARIABLE_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';
export const LOCALE_PATTERN = '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$';
export const MAX_TOOLS = 32;
export const MAX_DESTINATIONS = 20;
export const MAX_PARAMETERS_BYTES = 16_384;
export const MAX_METADATA_BYTES = 4_096;
export const MAX_WEBHOOK_TIMEOUT_MS = 10_000;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_DURATION_SECONDS = 600;
export const DEFAULT_SILENCE_TIMEOUT_SECONDS = 30;
export const DEFAULT_FAILURE_MESSAGE = 'Sorry, I am having trouble right now. Please call again later. Goodbye.';

export interface TransferDestination {
  name: string;
  description: string;
  /** An E.164 number or a sip:/sips: URI: configured here, never chosen by the model. */
  target: string;
}

export type AgentTool =
  | { type: 'transfer'; name: string; description: string; destinations: TransferDestination[]; mode: 'blind' | 'warm' }
  | { type: 'end_call'; name: string; description: string }
  | { type: 'webhook'; name: string; description: string; url: string; parameters: Record<string, unknown>; timeoutMs: number }
  | { type: 'send_sms'; name: string; description: string; from: string | null };

export interface LlmConfig {
  provider: 'openai-compatible';
  model: string;
  baseUrl: string;
  apiKey: string | null;
  temperature: number | null;
  maxTokens: number | null;
}

export interface SttConfig {
  provider: 'pocketsphinx' | 'openai-compatible';
  model: string | null;
  baseUrl: string | null;
  apiKey: string | null;
}

export type FailureThen = 'hangup' | { transfer: string };

/** One version of an agent, complete (every default applied): what the call loop runs. */
export interface AgentConfig {
  name: string;
  systemPrompt: string | null;
  firstMessage: string | null;
  voice: { locale: string; voiceId: string | null };
  language: string;
  llm: LlmConfig | null;
  relay: { url: string } | null;
  stt: SttConfig;
  tools: AgentTool[];
  maxDurationSeconds: number;
  silenceTimeoutSeconds: number;
  endCallPhrases: string[];
  failure: { message: string; then: FailureThen };
  variables: Record<string, string>;
  metadata: Record<string, unknown>;
}

/** What a request may give (the route schema has checked the shapes); null and absent both mean "the default". */
export type AgentInput = { [K in keyof AgentConfig]?: unknown };

export interface AgentRules {
  /** The server's voice.maxDurationSeconds: no agent talks longer than a call may last. */
  maxDurationSeconds: number;
  /** The SSRF guard's policy: plain http:// and ws:// only where private targets are allowed (a developer machine). */
  httpsOnly: boolean;
  /** The locale of an agent that names neither voice nor language (voice.tts.defaultLocale). */
  defaultLocale: string;
}

// ajv ships CommonJS; under NodeNext its default export sits one level down.
const Ajv = ((AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule) as unknown as typeof AjvModule.default;
/**
 * Checks a webhook tool's parameters against the JSON Schema meta-schema; never compiles the customer's schema. Made on
 * first use: an Ajv instance costs CPU that every process loading the gateway would otherwise pay.
 */
let metaSchemaChecker: InstanceType<typeof Ajv> | undefined;
const metaSchema = (): InstanceType<typeof Ajv> => (metaSchemaChecker ??= new Ajv({ strict: false, validateSchema: true }));

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);
const VARIABLE_NAME = new RegExp(VARIABLE_NAME_PATTERN);
const E164 = /^\+[1-9][0-9]{6,14}$/;
const SIP_URI = /^sips?:([A-Za-z0-9\-_.!~*'()&=+$,;?/%]+@)?[A-Za-z0-9.-]+(:[0-9]{1,5})?(;[A-Za-z0-9\-_.!~*'()&=+$%;]*)?$/;
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

const DEFAULT_TOOL_DESCRIPTIONS = {
  end_call: 'Ends the call. Use it once the conversation is over and you have said goodbye.',
  send_sms: 'Sends a text message to the person on the call, e.g. a link or a confirmation they asked for.',
} as const;

/** The problems found so far, each with its field (dotted, as VALIDATION_ERROR names them: tools.1.destinations). */
class Problems {
  readonly list: FieldError[] = [];
  add(field: string, message: string): void {
    this.list.push({ field, message });
  }
  /** VOICE_AGENT_INVALID naming the first problem in its message and every one in data.errors; null when there is none. */
  error(): ApiError | null {
    if (!this.list.length) return null;
    const [first] = this.list;
    const more = this.list.length > 1 ? ` (and ${this.list.length - 1} more: see data.errors)` : '';
    return new ApiError('VOICE_AGENT_INVALID', { message: `The agent is not valid: ${first.field}: ${first.message}${more}`, data: { errors: this.list } });
  }
}

/** VOICE_AGENT_INVALID for one field. */
export function agentInvalid(field: string, message: string): ApiError {
  const p = new Problems();
  p.add(field, message);
  return p.error()!;
}

const given = (v: unknown): boolean => v !== undefined && v !== null;
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);
const obj = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);

/**
 * A URL of one of `secure`/`plain` schemes (plain ones only where the SSRF guard lets private targets through), with no
 * credentials in it; null with the problem added otherwise. Whether its host may be reached is the guard's, at use.
 */
function checkUrl(p: Problems, field: string, raw: unknown, schemes: { secure: string; plain: string }, rules: AgentRules): string | null {
  const text = str(raw);
  if (!text) {
    p.add(field, 'required');
    return null;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    p.add(field, 'not a valid URL');
    return null;
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (scheme !== schemes.secure && scheme !== schemes.plain) {
    p.add(field, `must be a ${schemes.secure}:// URL`);
    return null;
  }
  if (scheme === schemes.plain && rules.httpsOnly) {
    p.add(field, `must be a ${schemes.secure}:// URL (${schemes.plain}:// is accepted only where the server allows private targets)`);
    return null;
  }
  if (url.username || url.password) {
    p.add(field, 'credentials in the URL are not accepted (give a key in apiKey)');
    return null;
  }
  return text;
}

/** The {{names}} a template uses; each must be a variable name. */
function checkTemplate(p: Problems, field: string, text: string | null): void {
  if (!text) return;
  for (const m of text.matchAll(PLACEHOLDER)) {
    const name = m[1].trim();
    if (!VARIABLE_NAME.test(name)) p.add(field, `{{${m[1]}}} is not a variable: use {{name}} with letters, digits and _ (not starting with a digit)`);
  }
}

function normaliseLlm(p: Problems, raw: Record<string, unknown>, rules: AgentRules): LlmConfig {
  const model = str(raw.model);
  if (!model) p.add('llm.model', 'required');
  const baseUrl = checkUrl(p, 'llm.baseUrl', raw.baseUrl, { secure: 'https', plain: 'http' }, rules);
  return {
    provider: 'openai-compatible',
    model: model ?? '',
    baseUrl: baseUrl ?? '',
    apiKey: str(raw.apiKey),
    temperature: typeof raw.temperature === 'number' ? raw.temperature : null,
    maxTokens: typeof raw.maxTokens === 'number' ? raw.maxTokens : null,
  };
}

function normaliseStt(p: Problems, raw: Record<string, unknown> | null, rules: AgentRules): SttConfig {
  const provider = raw?.provider === 'openai-compatible' ? 'openai-compatible' : 'pocketsphinx';
  if (!raw || provider === 'pocketsphinx') {
    // pocketsphinx runs on this server: nothing to reach, nothing to pay.
    for (const f of ['model', 'baseUrl', 'apiKey'] as const) if (raw && given(raw[f])) p.add(`stt.${f}`, 'pocketsphinx runs on this server and takes no ' + f);
    return { provider: 'pocketsphinx', model: null, baseUrl: null, apiKey: null };
  }
  const model = str(raw.model);
  if (!model) p.add('stt.model', 'required for an openai-compatible speech-to-text provider (e.g. whisper-1)');
  const baseUrl = checkUrl(p, 'stt.baseUrl', raw.baseUrl, { secure: 'https', plain: 'http' }, rules);
  return { provider, model, baseUrl, apiKey: str(raw.apiKey) };
}

const TOOL_FIELDS: Record<AgentTool['type'], readonly string[]> = {
  transfer: ['type', 'name', 'description', 'destinations', 'mode'],
  end_call: ['type', 'name', 'description'],
  webhook: ['type', 'name', 'description', 'url', 'parameters', 'timeoutMs'],
  send_sms: ['type', 'name', 'description', 'from'],
};

function normaliseParameters(p: Problems, field: string, raw: unknown): Record<string, unknown> {
  if (!given(raw)) return { type: 'object', properties: {} };
  const schema = obj(raw);
  if (!schema) {
    p.add(field, 'a JSON Schema object');
    return {};
  }
  if (Buffer.byteLength(JSON.stringify(schema)) > MAX_PARAMETERS_BYTES) p.add(field, `at most ${MAX_PARAMETERS_BYTES} bytes of JSON`);
  else if (schema.type !== 'object') p.add(field, "the schema of the arguments is of type 'object' (as function calling takes it)");
  else {
    let valid = false;
    try {
      valid = metaSchema().validateSchema(schema) as boolean;
    } catch (err) {
      p.add(field, `not a JSON Schema this server reads (draft-07): ${(err as Error).message}`);
      return schema;
    }
    if (!valid) p.add(field, `not a valid JSON Schema: ${metaSchema().errorsText(metaSchema().errors, { dataVar: 'parameters' })}`);
  }
  return schema;
}

function normaliseTool(p: Problems, i: number, raw: Record<string, unknown>, rules: AgentRules): AgentTool | null {
  const at = `tools.${i}`;
  const type = raw.type as AgentTool['type'];
  const allowed = TOOL_FIELDS[type];
  if (!allowed) {
    p.add(`${at}.type`, 'one of transfer, end_call, webhook, send_sms');
    return null;
  }
  for (const k of Object.keys(raw)) if (!allowed.includes(k) && given(raw[k])) p.add(`${at}.${k}`, `not a field of a ${type} tool (it takes ${allowed.join(', ')})`);
  const name = str(raw.name) ?? (type === 'end_call' || type === 'send_sms' ? type : null);
  if (!name) p.add(`${at}.name`, `required for a ${type} tool (the name the model calls it by)`);
  else if (!TOOL_NAME.test(name)) p.add(`${at}.name`, `must match ${TOOL_NAME_PATTERN}`);
  const description = str(raw.description) ?? (type === 'end_call' || type === 'send_sms' ? DEFAULT_TOOL_DESCRIPTIONS[type] : null);
  if (!description) p.add(`${at}.description`, `required for a ${type} tool (the model reads it to know when to call it)`);
  const base = { name: name ?? '', description: description ?? '' };
  switch (type) {
    case 'transfer': {
      const list = Array.isArray(raw.destinations) ? raw.destinations : [];
      if (!list.length) p.add(`${at}.destinations`, 'a transfer tool needs at least one destination');
      if (list.length > MAX_DESTINATIONS) p.add(`${at}.destinations`, `at most ${MAX_DESTINATIONS}`);
      const seen = new Set<string>();
      const destinations = list.map((d, j) => {
        const dest = obj(d) ?? {};
        const dn = str(dest.name);
        const dAt = `${at}.destinations.${j}`;
        if (!dn || !TOOL_NAME.test(dn)) p.add(`${dAt}.name`, `required, matching ${TOOL_NAME_PATTERN} (the model picks a destination by this name)`);
        else if (seen.has(dn)) p.add(`${dAt}.name`, `${dn} is given twice in this tool`);
        if (dn) seen.add(dn);
        const dd = str(dest.description);
        if (!dd) p.add(`${dAt}.description`, 'required (the model reads it to choose)');
        const target = str(dest.target);
        if (!target || !(E164.test(target) || SIP_URI.test(target))) p.add(`${dAt}.target`, 'an E.164 number (+ and country code) or a sip:/sips: URI');
        return { name: dn ?? '', description: dd ?? '', target: target ?? '' };
      });
      return { type, ...base, destinations, mode: raw.mode === 'warm' ? 'warm' : 'blind' };
    }
    case 'end_call':
      return { type, ...base };
    case 'webhook': {
      const url = checkUrl(p, `${at}.url`, raw.url, { secure: 'https', plain: 'http' }, rules);
      const timeoutMs = typeof raw.timeoutMs === 'number' ? raw.timeoutMs : DEFAULT_WEBHOOK_TIMEOUT_MS;
      if (timeoutMs > MAX_WEBHOOK_TIMEOUT_MS) p.add(`${at}.timeoutMs`, `at most ${MAX_WEBHOOK_TIMEOUT_MS} (a caller is waiting)`);
      return { type, ...base, url: url ?? '', parameters: normaliseParameters(p, `${at}.parameters`, raw.parameters), timeoutMs };
    }
    case 'send_sms':
      return { type, ...base, from: str(raw.from) };
  }
}

/**
 * The complete configuration of a version from what a request gave, or VOICE_AGENT_INVALID naming every problem.
 * The voice is checked against the catalogue by the caller (it needs the speech engines).
 */
export function normaliseAgent(input: AgentInput, rules: AgentRules): AgentConfig {
  const p = new Problems();
  const name = str(input.name);
  if (!name) p.add('name', 'required');

  const llmIn = obj(input.llm);
  const relayIn = obj(input.relay);
  if (llmIn && relayIn) p.add('relay', 'give either llm (a model Ferry calls) or relay (your own model over a WebSocket), not both');
  if (!llmIn && !relayIn) p.add('llm', 'give llm (a model Ferry calls) or relay (your own model over a WebSocket)');
  const llm = llmIn ? normaliseLlm(p, llmIn, rules) : null;
  const relayUrl = relayIn ? checkUrl(p, 'relay.url', relayIn.url, { secure: 'wss', plain: 'ws' }, rules) : null;
  const relay = relayIn ? { url: relayUrl ?? '' } : null;

  const systemPrompt = str(input.systemPrompt);
  if (llm && !systemPrompt) p.add('systemPrompt', 'required with llm (it tells the model who it is and what to do)');
  const firstMessage = str(input.firstMessage);

  const voiceIn = obj(input.voice) ?? {};
  const language = str(input.language);
  const voice = { locale: str(voiceIn.locale) ?? language ?? rules.defaultLocale, voiceId: str(voiceIn.voiceId) };

  const stt = normaliseStt(p, obj(input.stt), rules);

  const toolsIn = Array.isArray(input.tools) ? input.tools : [];
  if (toolsIn.length > MAX_TOOLS) p.add('tools', `at most ${MAX_TOOLS}`);
  const tools: AgentTool[] = [];
  const toolNames = new Map<string, number>();
  toolsIn.forEach((raw, i) => {
    const tool = normaliseTool(p, i, obj(raw) ?? {}, rules);
    if (!tool) return;
    const earlier = toolNames.get(tool.name);
    if (tool.name && earlier !== undefined) p.add(`tools.${i}.name`, `${tool.name} is also the name of tools.${earlier}: tool names are unique`);
    else toolNames.set(tool.name, i);
    tools.push(tool);
  });

  const maxDurationSeconds = typeof input.maxDurationSeconds === 'number' ? input.maxDurationSeconds : Math.min(DEFAULT_MAX_DURATION_SECONDS, rules.maxDurationSeconds);
  if (maxDurationSeconds > rules.maxDurationSeconds) p.add('maxDurationSeconds', `at most ${rules.maxDurationSeconds} on this server (voice.maxDurationSeconds)`);
  const silenceTimeoutSeconds = typeof input.silenceTimeoutSeconds === 'number' ? input.silenceTimeoutSeconds : DEFAULT_SILENCE_TIMEOUT_SECONDS;
  if (silenceTimeoutSeconds >= maxDurationSeconds) p.add('silenceTimeoutSeconds', `must be shorter than maxDurationSeconds (${maxDurationSeconds})`);

  const endCallPhrases = [...new Set((Array.isArray(input.endCallPhrases) ? input.endCallPhrases : []).map((s) => str(s)).filter((s): s is string => s !== null))];

  const failureIn = obj(input.failure) ?? {};
  const failureMessage = str(failureIn.message) ?? DEFAULT_FAILURE_MESSAGE;
  let then: FailureThen = 'hangup';
  const thenIn = obj(failureIn.then);
  if (thenIn) {
    const dest = str(thenIn.transfer) ?? '';
    const targets = new Set(tools.flatMap((t) => (t.type === 'transfer' ? t.destinations.filter((d) => d.name === dest).map((d) => d.target) : [])));
    if (!targets.size) p.add('failure.then.transfer', `${dest || '(empty)'} is not a destination of a transfer tool of this agent`);
    else if (targets.size > 1) p.add('failure.then.transfer', `${dest} names different targets in two transfer tools; rename one`);
    then = { transfer: dest };
  }

  const variables = (obj(input.variables) ?? {}) as Record<string, string>;
  const metadata = obj(input.metadata) ?? {};
  if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) p.add('metadata', `at most ${MAX_METADATA_BYTES} bytes of JSON`);

  checkTemplate(p, 'systemPrompt', systemPrompt);
  checkTemplate(p, 'firstMessage', firstMessage);
  checkTemplate(p, 'failure.message', failureMessage);
  const invalid = p.error();
  if (invalid) throw invalid;

  return {
    name: name!,
    systemPrompt,
    firstMessage,
    voice,
    language: language ?? voice.locale,
    llm,
    relay,
    stt,
    tools,
    maxDurationSeconds,
    silenceTimeoutSeconds,
    endCallPhrases,
    failure: { message: failureMessage, then },
    variables,
    metadata,
  };
}

/** RFC 7396 JSON merge patch: objects merge member by member, null removes a member, anything else (arrays too) replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  const p = obj(patch);
  if (!p) return patch;
  const out: Record<string, unknown> = { ...(obj(target) ?? {}) };
  for (const [k, v] of Object.entries(p)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * The agent a PATCH asks for: the stored configuration with the patch merged in (mergePatch), where giving `relay`
 * replaces `llm` and the other way round, and a speech-to-text provider other than the stored one replaces `stt` whole.
 * A changed llm.baseUrl or stt.baseUrl without the key given again is refused: a stored key never goes to a new host.
 */
export function patchedInput(current: AgentConfig, patch: AgentInput): AgentInput {
  const base: Record<string, unknown> = { ...current };
  if (given(patch.relay) && !('llm' in patch)) delete base.llm;
  if (given(patch.llm) && !('relay' in patch)) delete base.relay;
  const sttPatch = obj(patch.stt);
  if (sttPatch && given(sttPatch.provider) && sttPatch.provider !== current.stt.provider) delete base.stt;
  const merged = mergePatch(base, patch) as AgentInput;
  for (const part of ['llm', 'stt'] as const) {
    const before = current[part];
    const after = obj(merged[part]);
    const keyGiven = obj(patch[part]) !== null && 'apiKey' in obj(patch[part])!;
    const baseUrl = after ? str(after.baseUrl) : null;
    if (before?.apiKey && baseUrl !== null && !keyGiven && baseUrl !== before.baseUrl) {
      throw agentInvalid(`${part}.apiKey`, `${part}.baseUrl changed: give the key for the new endpoint again (apiKey), or apiKey: null for none; a stored key is never sent to another host`);
    }
  }
  return merged;
}
