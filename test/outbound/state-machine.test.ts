import t from 'tap';
import { StateMachine } from '../../src/outbound/state-machine.js';

// The messenger shape: queued → sent → delivered → read, failed from anywhere before a final state.
const messenger = new StateMachine({
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

t.test('moves only forward; lower ranks and anything after a final state are late', async (t) => {
  const table: Array<[string, string, string]> = [
    ['queued', 'sent', 'changed'],
    ['queued', 'delivered', 'changed'], // a callback may overtake the send's record
    ['sent', 'delivered', 'changed'],
    ['delivered', 'read', 'changed'],
    ['sent', 'failed', 'changed'],
    ['delivered', 'failed', 'changed'],
    ['read', 'delivered', 'late'], // a late delivered after read does not demote
    ['delivered', 'sent', 'late'],
    ['sent', 'queued', 'late'],
    ['read', 'failed', 'late'],
    ['failed', 'sent', 'late'],
    ['sent', 'sent', 'unchanged'],
    ['read', 'read', 'unchanged'],
    ['sent', 'bounced', 'invalid'],
    ['nope', 'sent', 'invalid'],
  ];
  for (const [from, to, want] of table) t.equal(messenger.decide(from, to), want, `${from} → ${to}: ${want}`);
});

t.test('events, finals and roles', async (t) => {
  t.equal(messenger.eventOf('sent'), 'messenger.sent');
  t.equal(messenger.eventOf('nope'), null);
  t.same(messenger.eventTypes().sort(), ['messenger.delivered', 'messenger.failed', 'messenger.queued', 'messenger.read', 'messenger.sent']);
  t.ok(messenger.isFinal('read'));
  t.notOk(messenger.isFinal('delivered'));
  t.equal(messenger.rank('delivered'), 2);
  const quiet = new StateMachine({ product: 'push', initial: 'queued', sent: 'sent', failed: 'failed', states: { queued: { rank: 0 }, sent: { rank: 1, event: 'sent' }, failed: { rank: 2, final: true } } });
  t.equal(quiet.eventOf('queued'), null, 'a state without an event emits none');
});

t.test('a table that cannot work is refused when built', async (t) => {
  const base = { product: 'x', initial: 'queued', sent: 'sent', failed: 'failed' };
  t.throws(() => new StateMachine({ ...base, states: { queued: { rank: 0 }, sent: { rank: 1 } } }), /failed state failed is not in the table/);
  t.throws(() => new StateMachine({ ...base, states: { queued: { rank: 0 }, sent: { rank: 1 }, failed: { rank: 2 } } }), /failed state must be final/);
  t.throws(() => new StateMachine({ ...base, states: { queued: { rank: 1 }, sent: { rank: 1 }, failed: { rank: 2, final: true } } }), /must rank above the initial/);
  t.throws(() => new StateMachine({ ...base, states: { queued: { rank: 0, final: true }, sent: { rank: 1 }, failed: { rank: 2, final: true } } }), /initial state cannot be final/);
  t.throws(() => new StateMachine({ ...base, product: 'Bad Name', states: { queued: { rank: 0 }, sent: { rank: 1 }, failed: { rank: 2, final: true } } }), /product name/);
});
