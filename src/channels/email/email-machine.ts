import { registerEventTypes } from '../../events/catalogue.js';
import { StateMachine } from '../../outbound/index.js';

/** Webhook events of the email product (docs/email.md). */
export const EMAIL_EVENTS = {
  'email.sent': 'the relay accepted the message (data.providerMessageId: its reply)',
  'email.delivered': 'the receiving server accepted the message',
  'email.deferred': 'an attempt got a temporary (4xx) answer; it is retried',
  'email.bounced': 'the message bounced: a 5xx at SMTP time or a DSN (data.error, data.providerError the SMTP reply or status)',
  'email.dropped': 'the recipient is suppressed; nothing was sent',
  'email.complained': 'the recipient reported the message as spam (ARF report)',
  'email.opened': 'the message was opened (data.machine: an image proxy or prefetcher)',
  'email.clicked': 'a link in the message was followed (data.url)',
  'email.unsubscribed': 'the recipient unsubscribed (List-Unsubscribe one-click)',
  'email.failed': 'the message could not be sent before its deadline',
} as const;
registerEventTypes(EMAIL_EVENTS);

// The static type of the email events (EventType), without touching the shared catalogue.
declare module '../../events/catalogue.js' {
  interface ProductEventTypes {
    'email.sent': true;
    'email.delivered': true;
    'email.deferred': true;
    'email.bounced': true;
    'email.dropped': true;
    'email.complained': true;
    'email.opened': true;
    'email.clicked': true;
    'email.unsubscribed': true;
    'email.failed': true;
  }
}

/**
 * The email state machine (one table; ranks move forward only). Delivery states are ranks: queued → sent (the relay
 * took it) → delivered (the receiving server took it). Engagement states rank above them so that an open after
 * delivery moves the status on, and a late `delivered` DSN after an open is recorded, not applied. bounced, complained
 * and unsubscribed are final: an open after a complaint is history only. `deferred` is not a state: a 4xx is an
 * attempt in the job's history (and an email.deferred event), the job stays queued and is retried. `dropped` rows
 * never get a job.
 */
export const EMAIL_MACHINE = new StateMachine({
  product: 'email',
  initial: 'queued',
  sent: 'sent',
  failed: 'failed',
  states: {
    queued: { rank: 0 },
    sent: { rank: 1, event: 'sent' },
    delivered: { rank: 2, event: 'delivered' },
    opened: { rank: 3, event: 'opened' },
    clicked: { rank: 4, event: 'clicked' },
    failed: { rank: 8, final: true, event: 'failed' },
    bounced: { rank: 8, final: true, event: 'bounced' },
    complained: { rank: 9, final: true, event: 'complained' },
    unsubscribed: { rank: 9, final: true, event: 'unsubscribed' },
  },
});

export const EMAIL_STATUSES = ['queued', 'sent', 'delivered', 'deferred', 'bounced', 'dropped', 'complained', 'opened', 'clicked', 'unsubscribed', 'failed'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];
