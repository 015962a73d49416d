import t from 'tap';
import { EVENT_DATA_SCHEMAS, EVENT_DESCRIPTIONS, EVENT_PAYLOAD_SCHEMA, EVENT_TYPES, eventCatalogueMarkdown, isEventType, registerEventTypes } from '../../src/events/catalogue.js';

t.test('a product registers its <product>.* event types; the built-in ones stay as they are', async (t) => {
  const before = [...EVENT_TYPES];
  t.equal(before[0], 'sms.queued');
  t.ok(isEventType('otp.verified'));
  t.notOk(isEventType('fax.sent'));

  const added = registerEventTypes({
    'fax.sent': 'the fax was accepted by the provider',
    'fax.failed': { description: 'the fax failed', data: { type: 'object', properties: { error: { type: 'string' } } } },
  });
  t.same(added, ['fax.sent', 'fax.failed']);
  t.ok(isEventType('fax.sent'));
  t.same(EVENT_TYPES.slice(0, before.length), before, 'built-in types first, unchanged');
  t.same(EVENT_TYPES.slice(before.length), ['fax.sent', 'fax.failed'], 'then the registered ones, in order');
  t.equal(EVENT_DESCRIPTIONS['fax.sent' as never], 'the fax was accepted by the provider');
  t.same(EVENT_DATA_SCHEMAS['fax.failed' as never], { type: 'object', properties: { error: { type: 'string' } } });
  t.same(EVENT_DATA_SCHEMAS['fax.sent' as never], { type: 'object', additionalProperties: true }, 'an open object by default');
  t.ok((EVENT_PAYLOAD_SCHEMA.properties.type.enum as readonly string[]).includes('fax.sent'), 'the payload schema lists them');
  t.match(eventCatalogueMarkdown(), /\| fax\.failed \| the fax failed \|/);

  t.same(registerEventTypes({ 'fax.sent': 'the fax was accepted by the provider' }), ['fax.sent'], 'the same again is a no-op');
  t.equal(EVENT_TYPES.filter((x) => (x as string) === 'fax.sent').length, 1);
  t.throws(() => registerEventTypes({ 'fax.sent': 'something else' }), /already registered/);
  t.throws(() => registerEventTypes({ 'sms.read': 'x' }), /sms\.\* family is built in/);
  t.throws(() => registerEventTypes({ 'Fax.Sent': 'x' }), /lower case/);
  t.throws(() => registerEventTypes({ fax: 'x' }), /<product>\.<event>/);
  t.throws(() => registerEventTypes({ 'fax.ok': 'x', 'fax.bad': '' }), /description is required/);
  t.notOk(isEventType('fax.ok'), 'a refused call registers none of its types');
});
