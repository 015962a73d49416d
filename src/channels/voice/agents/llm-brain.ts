/**
 * An agent's brain when Ferry calls the model: the conversation kept as chat messages, each caller utterance a turn
 * streamed from the model and spoken sentence by sentence, tools run between rounds and their answers fed back.
 */
import { EventEmitter } from 'node:events';
import { assistantMessage, LlmError, SentenceChunker, type ChatMessage, type ChatModel, type ChatTool } from '../../../llm/index.js';
import type { AgentConfig } from './agent-config.js';
import type { AgentBrain, BrainEvents, BrainFailure, BrainSetup } from './agent-brain.js';
import { fillVariables, modelTools, runTool, type AgentCallActions } from './agent-tools.js';

export interface LlmBrainOptions {
  model: ChatModel;
  config: AgentConfig;
  actions: AgentCallActions;
  /** Model rounds per caller turn (each tool answer is one more); bounds a model that keeps calling tools. */
  maxRounds?: number;
  /** Messages kept besides the system prompt; older ones are dropped in pairs so the request stays bounded. */
  maxHistory?: number;
}

const FAILURE_CODES: Readonly<Record<string, string>> = {
  timeout: 'LLM_TIMEOUT',
  'rate-limited': 'LLM_RATE_LIMITED',
  auth: 'LLM_AUTH',
  'bad-request': 'LLM_BAD_REQUEST',
  'bad-response': 'LLM_BAD_RESPONSE',
  unavailable: 'LLM_UNAVAILABLE',
};

export class LlmBrain extends EventEmitter<BrainEvents> implements AgentBrain {
  private readonly messages: ChatMessage[] = [];
  private readonly tools: ChatTool[];
  private turn: AbortController | null = null;
  /** Turns run one after another: a new utterance aborts the one in progress, then waits for it to settle. */
  private running: Promise<void> = Promise.resolve();
  private closed = false;
  private stopped = false;

  constructor(private readonly o: LlmBrainOptions) {
    super();
    this.tools = modelTools(o.config.tools);
  }

  start(setup: BrainSetup): Promise<void> {
    const { config } = this.o;
    const context = `The call: ${setup.direction === 'outbound' ? `you called ${setup.to}` : `${setup.from} called you`}. Speak ${setup.language}. Keep answers short: they are spoken on a phone call.`;
    this.messages.push({ role: 'system', content: [fillVariables(config.systemPrompt ?? '', setup.variables), context].filter(Boolean).join('\n\n') });
    if (config.firstMessage) this.messages.push({ role: 'assistant', content: fillVariables(config.firstMessage, setup.variables) });
    return Promise.resolve();
  }

  prompt(text: string): void {
    this.queueTurn({ role: 'user', content: text });
  }

  dtmf(digit: string): void {
    this.queueTurn({ role: 'user', content: `(The caller pressed the key ${digit}.)` });
  }

  interrupt(heard: string): void {
    if (!this.turn) return;
    this.turn.abort();
    // The model's answer was cut: keep what the caller actually heard, so the model does not think it said the rest.
    if (heard.trim() !== '') this.messages.push({ role: 'assistant', content: `${heard.trim()} …` });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.turn?.abort();
    await this.running;
  }

  private queueTurn(message: ChatMessage): void {
    if (this.closed || this.stopped) return;
    this.turn?.abort();
    const previous = this.running;
    this.running = previous.then(() => {
      if (this.closed || this.stopped) return;
      this.messages.push(message);
      return this.runTurn();
    });
  }

  private async runTurn(): Promise<void> {
    const controller = new AbortController();
    this.turn = controller;
    const maxRounds = this.o.maxRounds ?? 4;
    try {
      for (let round = 0; round < maxRounds && !controller.signal.aborted; round++) {
        this.trimHistory();
        const chunker = new SentenceChunker();
        let result;
        const stream = this.o.model.stream(
          { messages: this.messages, tools: this.tools.length ? this.tools : undefined, temperature: this.o.config.llm?.temperature ?? undefined, maxTokens: this.o.config.llm?.maxTokens ?? undefined },
          { signal: controller.signal },
        );
        for await (const event of stream) {
          if (event.type === 'text') for (const piece of chunker.push(event.delta)) this.emit('say', piece, false);
          else if (event.type === 'done') result = event.result;
        }
        if (!result || controller.signal.aborted) return;
        for (const piece of chunker.flush()) this.emit('say', piece, false);
        this.messages.push(assistantMessage(result));
        if (!result.toolCalls.length) {
          this.emit('say', '', true);
          return;
        }
        let stop: string | null = null;
        for (const call of result.toolCalls) {
          const started = performance.now();
          const outcome = call.argumentsError
            ? { ok: false, result: { error: `the arguments are not valid JSON: ${call.argumentsError}` } }
            : await runTool(this.o.config.tools, this.o.actions, call.name, call.arguments);
          const ms = Math.round(performance.now() - started);
          this.emit('tool', { name: call.name, arguments: call.arguments ?? {}, result: outcome.result, ok: outcome.ok, ms });
          this.messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify(outcome.result ?? null) });
          if ('stop' in outcome && outcome.stop) stop = call.name;
        }
        if (stop) {
          // end_call, or a transfer that went through: the conversation ends once the last words are heard.
          this.stopped = true;
          this.emit('say', '', true);
          this.emit('end', { tool: stop });
          return;
        }
      }
      // Out of rounds: answer with what was said so far rather than loop on tools.
      if (!controller.signal.aborted) this.emit('say', '', true);
    } catch (err) {
      if (controller.signal.aborted || this.closed) return;
      this.emit('failed', brainFailure(err));
    } finally {
      if (this.turn === controller) this.turn = null;
    }
  }

  /** Keeps the system prompt and the newest messages, never starting the kept part on a tool answer. */
  private trimHistory(): void {
    const max = this.o.maxHistory ?? 60;
    if (this.messages.length - 1 <= max) return;
    let cut = this.messages.length - max;
    while (cut < this.messages.length && this.messages[cut].role === 'tool') cut++;
    this.messages.splice(1, cut - 1);
  }
}

function brainFailure(err: unknown): BrainFailure {
  if (err instanceof LlmError) return { code: FAILURE_CODES[err.code] ?? 'LLM_FAILED', message: err.message };
  return { code: 'LLM_FAILED', message: (err as Error)?.message ?? 'the model failed' };
}
