import { registerEventTypes } from '../../events/catalogue.js';
import { StateMachine } from '../../outbound/index.js';

/**
 * Webhook events of push (docs/push.md). One event per send, not per device (a topic of 100,000 devices is one
 * push.sent with its counts), and one per device the services said is gone.
 */
export const PUSH_EVENTS = {
  'push.sent': 'a send ended and reached at least one device (data: pushId, target, targeted, sent, failed, invalidated; providerId for a single device)',
  'push.failed': 'a send ended without reaching any device (data: pushId, target, counts, and error for a single device)',
  'push.device.invalidated': 'FCM or APNs said a device token is no longer valid; the device is now invalid (data: deviceId, appId, userId, reason)',
} as const;
registerEventTypes(PUSH_EVENTS);

declare module '../../events/catalogue.js' {
  interface ProductEventTypes {
    'push.sent': true;
    'push.failed': true;
    'push.device.invalidated': true;
  }
}

/**
 * The state of one batch job (a batch of devices of a send). Batches are the pipeline's work, not what customers
 * see: their states emit no events; the send's events come when its last batch ends (send-recorder.ts).
 */
export const PUSH_BATCH_MACHINE = new StateMachine({
  product: 'push',
  initial: 'queued',
  sent: 'sent',
  failed: 'failed',
  states: {
    queued: { rank: 0 },
    sent: { rank: 1, final: true },
    failed: { rank: 9, final: true },
  },
});
