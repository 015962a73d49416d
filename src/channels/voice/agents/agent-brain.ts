/**
 * What decides what an agent says: a model Ferry calls (the agent's `llm`), or the customer's own over a WebSocket
 * (the agent's `relay`). The call loop hears the caller and speaks; the brain only gets text and keys and answers
 * with things to say or do. Both kinds are driven the same way, so the loop does not know which it talks to.
 */
import type { EventEmitter } from 'node:events';

/** Sent once when the call is answered. */
export interface BrainSetup {
  callId: string;
  accountId: string;
  agentId: string;
  agentVersion: number;
  /** The caller and the called party as the trunk gave them (E.164 where known). */
  from: string;
  to: string;
  direction: 'outbound' | 'inbound';
  /** The agent's default variables merged with the call's. */
  variables: Record<string, string>;
  /** BCP 47, e.g. "en-US". */
  language: string;
}

export interface BrainEvents {
  /** Text to speak; `last` marks the end of one answer (the loop then waits for the caller). */
  say: [text: string, last: boolean];
  /** Audio to play from a URL (relay only; fetched through the SSRF guard). */
  play: [url: string];
  /** DTMF keys to send to the far end. */
  digits: [digits: string];
  /** A tool the model asked for was run (the loop records it with the transcript). */
  tool: [record: BrainToolRecord];
  /** The brain ends the call (with data for the call record, e.g. why). */
  end: [handoff: Record<string, unknown> | null];
  /** The brain cannot go on (model unreachable, relay closed, timeout): the loop speaks the apology. */
  failed: [error: BrainFailure];
}

export interface BrainToolRecord {
  name: string;
  arguments: Record<string, unknown>;
  result: unknown;
  ok: boolean;
  ms: number;
}

export interface BrainFailure {
  /** LLM_TIMEOUT, LLM_UNAVAILABLE, RELAY_CLOSED … (kept as the turn's error). */
  code: string;
  message: string;
}

export interface AgentBrain extends EventEmitter<BrainEvents> {
  /** Opens the conversation (a relay connects and sends `setup`); rejects when it cannot start. */
  start(setup: BrainSetup): Promise<void>;
  /** What the caller said, once an utterance was recognised (`last`: the utterance is complete). */
  prompt(text: string): void;
  /** A key the caller pressed. */
  dtmf(digit: string): void;
  /** The caller spoke over the agent: stop the answer in progress. `heard` is the text already spoken. */
  interrupt(heard: string): void;
  /** The call is over: free everything (closes the relay socket, aborts a model request). Idempotent. */
  close(): Promise<void>;
}
