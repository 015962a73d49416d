// ctx.events: a module emits only the types of its own catalogue, through the sink the webhooks module registers
// (late-bound: a module created before it emits through the slot), in the caller's transaction; wake after commit.
import t from 'tap';
import type { NewEvent } from '../../src/events/event-outbox.js';
import { EventSinkSlot, type EventSink } from '../../src/platform/event-sink.js';
import type { Queryable } from '../../src/store/types.js';
import { createLogger } from '../../src/log.js';
import { registerEventTypes } from '../../src/events/catalogue.js';

// What the module host does for a module's `events` before it is created.
registerEventTypes({ 'echo.sent': 'sent', 'echo.failed': 'failed' });
// A product that registers its family when it loads (as messenger does) rather than in its declaration.
registerEventTypes({ 'fam.thing': 'a thing' });

function recordingSink() {
  const calls: Array<{ how: 'insert' | 'now'; q?: Queryable; events: readonly NewEvent[] }> = [];
  let wakes = 0;
  const sink: EventSink = {
    insert: async (q, events) => (calls.push({ how: 'insert', q, events }), events.length),
    insertNow: async (events) => void calls.push({ how: 'now', events }),
    wake: () => void wakes++,
    subscribed: async (_q, ids) => new Set(ids.filter((id) => id.startsWith('acc_yes'))),
  };
  return { sink, calls, wakes: () => wakes };
}

const q: Queryable = { query: async () => ({ rows: [], rowCount: 0 }) };

t.test('emit goes through the late-bound sink in the caller’s Queryable; wake and emitNow reach it too', async (t) => {
  const slot = new EventSinkSlot(createLogger('silent'));
  const echo = slot.forModule({ name: 'echo', events: { 'echo.sent': 'sent', 'echo.failed': 'failed' } });
  const webhooks = slot.forModule({ name: 'webhooks' });
  // Created before the provider: nothing to write to yet, nothing thrown.
  t.equal(await echo.emit(q, { accountId: 'acc_1', type: 'echo.sent' as never, data: {} }), 0, 'no sink yet: dropped');
  t.same(await echo.subscribed(q, ['acc_yes'], 'echo.sent' as never), new Set(), 'no sink: nobody subscribes');
  const r = recordingSink();
  webhooks.provide(r.sink);
  t.throws(() => echo.provide(r.sink), /module echo provides an event sink, but one is already registered/);
  t.equal(await echo.emit(q, [{ accountId: 'acc_1', type: 'echo.sent' as never, data: { a: 1 }, messageKey: 'm1' }, { accountId: 'acc_2', type: 'echo.failed' as never, data: {} }]), 2);
  t.equal(r.calls[0].q, q, "written through the caller's transaction");
  t.same(r.calls[0].events, [
    { accountId: 'acc_1', type: 'echo.sent', messageKey: 'm1', data: { a: 1 } },
    { accountId: 'acc_2', type: 'echo.failed', messageKey: null, data: {} },
  ]);
  echo.wake();
  t.equal(r.wakes(), 1, 'woken after the commit');
  await echo.emitNow({ accountId: 'acc_1', type: 'echo.sent' as never, data: {} });
  t.equal(r.calls[1].how, 'now');
  t.same(await echo.subscribed(q, ['acc_yes1', 'acc_no'], 'echo.sent' as never), new Set(['acc_yes1']));
});

t.test('a type outside the module’s catalogue throws, and nothing of the batch is written', async (t) => {
  const slot = new EventSinkSlot();
  const r = recordingSink();
  slot.provide(r.sink, 'webhooks');
  const echo = slot.forModule({ name: 'echo', events: { 'echo.sent': 'sent' } });
  const otp = slot.forModule({ name: 'otp' });
  await t.rejects(echo.emit(q, [{ accountId: 'a', type: 'echo.sent' as never, data: {} }, { accountId: 'a', type: 'echo.lost' as never, data: {} }]), /module echo emits event type "echo.lost", which is not in its catalogue/);
  await t.rejects(echo.emitNow({ accountId: 'a', type: 'sms.delivered', data: {} }), /not in its catalogue/, "another family's built-in type");
  await t.rejects(otp.emit(q, { accountId: 'a', type: 'echo.sent' as never, data: {} }), /module otp emits event type "echo.sent"/, "another module's registered type");
  t.equal(r.calls.length, 0);
  t.equal(await otp.emit(q, { accountId: 'a', type: 'otp.verified', data: {} }), 1, "a built-in family is its module's (otp.*)");
  const fam = slot.forModule({ name: 'fam' });
  t.equal(await fam.emit(q, { accountId: 'a', type: 'fam.thing' as never, data: {} }), 1, 'a registered type of its own family');
  await t.rejects(fam.emit(q, { accountId: 'a', type: 'fam.other' as never, data: {} }), /not in its catalogue/, 'its family, but not registered');
});
