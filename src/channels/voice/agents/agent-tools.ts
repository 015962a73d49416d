/**
 * An agent's tools as the model sees them, and what running one means. The model only ever names things the agent
 * was configured with: a transfer picks a destination by its name (an enum), never a number or URI of its own.
 */
import type { ChatTool } from '../../../llm/index.js';
import type { AgentTool, TransferDestination } from './agent-config.js';

/** What a tool did, for the model (as the tool message) and for the transcript. */
export interface ToolOutcome {
  ok: boolean;
  /** JSON-able; what the model reads. */
  result: unknown;
  /** The conversation is over once this answer has been spoken (end_call, a transfer that went through). */
  stop?: boolean;
}

/** The call-side actions tools need: implemented by the call session, which owns SIP, media and the account. */
export interface AgentCallActions {
  transfer(destination: TransferDestination, mode: 'blind' | 'warm', reason: string | null): Promise<ToolOutcome>;
  end(reason: string | null): Promise<ToolOutcome>;
  sendSms(tool: Extract<AgentTool, { type: 'send_sms' }>, message: string): Promise<ToolOutcome>;
  webhook(tool: Extract<AgentTool, { type: 'webhook' }>, args: Record<string, unknown>): Promise<ToolOutcome>;
}

/** The model's view of each configured tool (function name, description, JSON Schema of its arguments). */
export function modelTools(tools: readonly AgentTool[]): ChatTool[] {
  return tools.map((tool): ChatTool => {
    switch (tool.type) {
      case 'transfer':
        return {
          name: tool.name,
          description: `${tool.description}\nDestinations (pick one by name):\n${tool.destinations.map((d) => `- ${d.name}: ${d.description}`).join('\n')}`,
          parameters: {
            type: 'object',
            additionalProperties: false,
            required: ['destination'],
            properties: {
              destination: { type: 'string', enum: tool.destinations.map((d) => d.name), description: 'The name of one of the destinations listed.' },
              reason: { type: 'string', description: 'Why the caller is transferred, in a few words.' },
            },
          },
        };
      case 'end_call':
        return { name: tool.name, description: tool.description, parameters: { type: 'object', additionalProperties: false, properties: { reason: { type: 'string' } } } };
      case 'send_sms':
        return {
          name: tool.name,
          description: tool.description,
          parameters: { type: 'object', additionalProperties: false, required: ['message'], properties: { message: { type: 'string', maxLength: 1600, description: 'The text to send to the caller.' } } },
        };
      case 'webhook':
        return { name: tool.name, description: tool.description, parameters: tool.parameters };
    }
  });
}

/**
 * Runs the tool the model named with the arguments it gave. Anything the model got wrong (an unknown tool, a
 * destination not configured, missing text) is answered to the model as an error it can read and recover from;
 * it never reaches a number or URL the agent was not configured with.
 */
export async function runTool(tools: readonly AgentTool[], actions: AgentCallActions, name: string, args: Record<string, unknown> | undefined): Promise<ToolOutcome> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) return { ok: false, result: { error: `there is no tool named ${JSON.stringify(name)}` } };
  const given = args ?? {};
  const reason = typeof given.reason === 'string' ? given.reason.slice(0, 500) : null;
  switch (tool.type) {
    case 'transfer': {
      const destination = tool.destinations.find((d) => d.name === given.destination);
      if (!destination) {
        return { ok: false, result: { error: `transfer only to one of: ${tool.destinations.map((d) => d.name).join(', ')}` } };
      }
      return actions.transfer(destination, tool.mode, reason);
    }
    case 'end_call':
      return actions.end(reason);
    case 'send_sms': {
      const message = typeof given.message === 'string' ? given.message.trim() : '';
      if (message === '') return { ok: false, result: { error: 'the message is empty' } };
      return actions.sendSms(tool, message.slice(0, 1600));
    }
    case 'webhook':
      return actions.webhook(tool, given);
  }
}

/** `{{name}}` replaced by the variable's value; an unknown name is left as written. */
export function fillVariables(template: string, variables: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, name: string) => (Object.hasOwn(variables, name) ? variables[name] : whole));
}
