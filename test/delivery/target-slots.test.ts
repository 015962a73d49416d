import t from 'tap';
import { TargetSlots } from '../../src/delivery/target-slots.js';

t.test('a cap per target; a freed slot goes to the oldest waiter of that target', async (t) => {
  const slots = new TargetSlots(2);
  t.ok(slots.tryTake('a') && slots.tryTake('a'), 'two slots of a');
  t.notOk(slots.tryTake('a'), 'no third');
  t.notOk(slots.hasRoom('a'));
  t.ok(slots.hasRoom('b') && slots.tryTake('b'), 'another target has its own');
  const granted: string[] = [];
  slots.wait('a', () => granted.push('first'));
  slots.wait('a', () => granted.push('second'));
  t.equal(slots.waiting('a'), 2);
  slots.release('b');
  t.same(granted, [], "b's slot is not a's");
  slots.release('a');
  t.same(granted, ['first'], 'the oldest waiter takes the freed slot');
  t.equal(slots.count('a'), 2, 'which it now holds');
  slots.release('a');
  t.same(granted, ['first', 'second']);
  t.notOk(slots.hasRoom('a'), 'still full: the waiters hold the slots');
  slots.release('a');
  slots.release('a');
  t.equal(slots.count('a'), 0, 'all returned');
  t.ok(slots.hasRoom('a'));
});

t.test('a free slot is not taken past waiters; take() resolves in order', async (t) => {
  const slots = new TargetSlots(1);
  await slots.take('x');
  const order: number[] = [];
  const p1 = slots.take('x').then(() => order.push(1));
  const p2 = slots.take('x').then(() => order.push(2));
  t.notOk(slots.hasRoom('x'), 'waiters come first');
  slots.release('x');
  await p1;
  slots.release('x');
  await p2;
  t.same(order, [1, 2]);
  slots.clear();
  t.equal(slots.count('x'), 0, 'clear forgets every slot');
});
