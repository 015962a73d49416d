/**
 * The relay protocol: JSON text frames between Ferry and a customer's own model over a WebSocket, in the manner of
 * Twilio's ConversationRelay. Ferry sends what happens on the call (setup, prompt, dtmf, interrupt, end); the customer
 * answers with text to speak (streamed token by token), audio to play, keys to send, or the end of the call.
 * docs/voice-agents.md ("Bring your own model: the relay protocol") documents every field for customers.
 */

/** Sent once, right after the connection opens. */
export interface RelaySetupFrame {
  type: 'setup';
  callId: string;
  accountId: string;
  agentId: string;
  agentVersion: number;
  from: string;
  to: string;
  direction: 'outbound' | 'inbound';
  variables: Record<string, string>;
  language: string;
}

/** One recognised utterance of the caller. */
export interface RelayPromptFrame {
  type: 'prompt';
  voicePrompt: string;
  /** Always true: Ferry sends whole utterances (kept for ConversationRelay clients that read it). */
  last: true;
  lang: string;
}

export interface RelayDtmfFrame {
  type: 'dtmf';
  digit: string;
}

/** The caller spoke over the agent: the answer in progress is no longer spoken. */
export interface RelayInterruptFrame {
  type: 'interrupt';
  /** The part of the answer the caller heard before speaking over it. */
  utteranceUntilInterrupt: string;
  /** From the moment Ferry handed the answer's first sentence to speech to the interruption. */
  durationUntilInterruptMs: number;
}

export type RelayEndReason = 'call-ended' | 'relay-timeout';

/** The call is over for the relay; the socket closes right after. */
export interface RelayEndFrame {
  type: 'end';
  /** call-ended: the call hung up (or was transferred); relay-timeout: the relay did not answer in time. */
  reason: RelayEndReason;
}

export type FerryFrame = RelaySetupFrame | RelayPromptFrame | RelayDtmfFrame | RelayInterruptFrame | RelayEndFrame;

/** Part of an answer: tokens are joined as sent (spaces included) and spoken sentence by sentence. */
export interface RelayTextFrame {
  type: 'text';
  token: string;
  /** The answer is complete: what is left of it is spoken now. */
  last: boolean;
}

export interface RelayPlayFrame {
  type: 'play';
  /** An https URL of audio (plain http only where the server allows private targets). */
  source: string;
  /** How many times to play it, 1–10 (default 1). */
  loop: number;
}

export interface RelaySendDigitsFrame {
  type: 'sendDigits';
  digits: string;
}

export interface RelayCustomerEndFrame {
  type: 'end';
  /** Kept with the call record (a JSON object; a string holding one is parsed). */
  handoffData: Record<string, unknown> | null;
}

export type CustomerFrame = RelayTextFrame | RelayPlayFrame | RelaySendDigitsFrame | RelayCustomerEndFrame;

export const MAX_TOKEN_CHARS = 4096;
export const MAX_PLAY_LOOP = 10;
export const MAX_DIGITS = 32;
export const MAX_HANDOFF_BYTES = 8192;
export const MAX_URL_CHARS = 2048;
const DIGITS = /^[0-9*#A-Da-d]+$/;

export type ParsedFrame = { ok: true; frame: CustomerFrame } | { ok: false; reason: string };

export interface ParseOptions {
  /** Accept http:// play sources too (only where the SSRF guard lets private targets through). */
  allowPlainHttp?: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * handoffData as the call record keeps it: an object as is, a string holding a JSON object parsed, any other string
 * kept under `value`; null when absent. Too large: replaced by a note saying so (the call still ends).
 */
function handoffOf(raw: unknown): { ok: true; value: Record<string, unknown> | null } | { ok: false; reason: string } {
  if (raw === undefined || raw === null) return { ok: true, value: null };
  let value: Record<string, unknown>;
  if (isObject(raw)) value = raw;
  else if (typeof raw === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    value = isObject(parsed) ? parsed : { value: raw };
  } else return { ok: false, reason: 'handoffData must be an object or a string' };
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_HANDOFF_BYTES) return { ok: true, value: { handoffDataDropped: `${bytes} bytes of JSON, over ${MAX_HANDOFF_BYTES}` } };
  return { ok: true, value };
}

/**
 * A customer's frame checked field by field; unknown fields are ignored (so the customer's side may send more as the
 * protocol grows), unknown types and wrong fields make the frame invalid (it is then ignored and counted).
 */
export function parseCustomerFrame(text: string, o: ParseOptions = {}): ParsedFrame {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (!isObject(raw)) return { ok: false, reason: 'not a JSON object' };
  switch (raw.type) {
    case 'text': {
      if (typeof raw.token !== 'string') return { ok: false, reason: 'text: token must be a string' };
      if (raw.token.length > MAX_TOKEN_CHARS) return { ok: false, reason: `text: token longer than ${MAX_TOKEN_CHARS} characters` };
      if (raw.last !== undefined && typeof raw.last !== 'boolean') return { ok: false, reason: 'text: last must be a boolean' };
      return { ok: true, frame: { type: 'text', token: raw.token, last: raw.last === true } };
    }
    case 'play': {
      if (typeof raw.source !== 'string' || raw.source.length > MAX_URL_CHARS) return { ok: false, reason: 'play: source must be a URL' };
      let url: URL;
      try {
        url = new URL(raw.source);
      } catch {
        return { ok: false, reason: 'play: source is not a valid URL' };
      }
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && o.allowPlainHttp)) return { ok: false, reason: 'play: source must be an https URL' };
      if (url.username || url.password) return { ok: false, reason: 'play: credentials in the URL are not accepted' };
      const loop = raw.loop ?? 1;
      if (typeof loop !== 'number' || !Number.isInteger(loop) || loop < 1 || loop > MAX_PLAY_LOOP) return { ok: false, reason: `play: loop must be an integer from 1 to ${MAX_PLAY_LOOP}` };
      return { ok: true, frame: { type: 'play', source: url.href, loop } };
    }
    case 'sendDigits': {
      const digits = raw.digits;
      if (typeof digits !== 'string' || digits.length === 0 || digits.length > MAX_DIGITS || !DIGITS.test(digits)) {
        return { ok: false, reason: `sendDigits: digits must be 1–${MAX_DIGITS} of 0-9 * # A-D` };
      }
      return { ok: true, frame: { type: 'sendDigits', digits: digits.toUpperCase() } };
    }
    case 'end': {
      const handoff = handoffOf(raw.handoffData);
      if (!handoff.ok) return { ok: false, reason: `end: ${handoff.reason}` };
      return { ok: true, frame: { type: 'end', handoffData: handoff.value } };
    }
    default:
      return { ok: false, reason: typeof raw.type === 'string' ? `unknown type ${JSON.stringify(raw.type.slice(0, 40))}` : 'type missing' };
  }
}
