import { registerEventTypes } from '../../events/catalogue.js';

/** Webhook events of voice calls (docs/voice.md): one per status change a caller cares about, in order per call. */
export const VOICE_EVENTS = {
  'voice.call.initiated': 'a call was claimed by an instance and is being dialled (data: the call)',
  'voice.call.ringing': 'the far end is ringing (180/183) (data: the call)',
  'voice.call.answered': 'the call was answered (200) (data: the call)',
  'voice.call.completed': 'an answered call ended (data: the call with duration, digits and cost)',
  'voice.call.failed': 'the call ended unanswered: busy, no-answer, failed or canceled (data: the call with its SIP code and reason)',
  'voice.agent.turn': "an agent answered the caller (data: callId, the text and the turn's latencies: speech-to-text, model, synthesis, total)",
  'voice.agent.tool': 'an agent ran a tool (data: callId, the tool, its arguments, result and duration)',
  'voice.agent.transfer': 'an agent transferred the call (data: callId, the destination by name, the mode and the outcome)',
} as const;
registerEventTypes(VOICE_EVENTS);

declare module '../../events/catalogue.js' {
  interface ProductEventTypes {
    'voice.call.initiated': true;
    'voice.call.ringing': true;
    'voice.call.answered': true;
    'voice.call.completed': true;
    'voice.call.failed': true;
    'voice.agent.turn': true;
    'voice.agent.tool': true;
    'voice.agent.transfer': true;
  }
}
