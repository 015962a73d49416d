import { registerEventTypes } from '../../events/catalogue.js';
import { StateMachine } from '../../outbound/index.js';

/** The messenger's webhook events (spec §6), registered when the module loads. */
export const MESSENGER_EVENTS = {
  'messenger.queued': 'the message was accepted (data.messageId)',
  'messenger.sent': 'the platform accepted the message (data.providerMessageId is its wamid)',
  'messenger.delivered': "delivered to the user's device",
  'messenger.read': 'read by the user',
  'messenger.failed': "the message failed (data.error is Ferry's WA code, data.providerError the platform's code)",
  'messenger.inbound': 'a user sent a message to the business number (opens the 24-hour window)',
  'messenger.template.status': "a template's review status changed (APPROVED, REJECTED, PAUSED, DISABLED)",
} as const;

registerEventTypes(MESSENGER_EVENTS);

/** queued → sent → delivered → read, or failed; never backwards (a delivered after read is recorded as late). */
export const MESSENGER_MACHINE = new StateMachine({
  product: 'messenger',
  initial: 'queued',
  sent: 'sent',
  failed: 'failed',
  states: {
    queued: { rank: 0, event: 'queued' },
    sent: { rank: 1, event: 'sent' },
    delivered: { rank: 2, event: 'delivered' },
    read: { rank: 3, final: true, event: 'read' },
    failed: { rank: 9, final: true, event: 'failed' },
  },
});

declare module '../../events/catalogue.js' {
  interface ProductEventTypes {
    'messenger.queued': true;
    'messenger.sent': true;
    'messenger.delivered': true;
    'messenger.read': true;
    'messenger.failed': true;
    'messenger.inbound': true;
    'messenger.template.status': true;
  }
}
