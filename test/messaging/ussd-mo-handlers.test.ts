import t from 'tap';
import { dialsServiceCode, UssdMoHandlers } from '../../src/messaging/ussd-mo-handlers.js';
import type { UpstreamMo } from '../../src/smpp/upstream/outbound.js';

function dial(destination: string, text = ''): UpstreamMo {
  return { upstreamId: 'u', bindIndex: 0, source: '233241234567', destination, dataCoding: 0, esmClass: 0, text, pdu: {} as UpstreamMo['pdu'], receivedAt: 0 };
}

t.test('the latest handler that accepts a session takes it; unregistering gives it back', async (t) => {
  const handlers = new UssdMoHandlers();
  const got: string[] = [];
  const offOtp = handlers.register({ name: 'otp', accepts: dialsServiceCode('*889*142#'), handle: (mo) => void got.push(`otp ${mo.destination}`) });
  await handlers.dispatch(dial('*889*142#'));
  await handlers.dispatch(dial('*384#'));
  t.same(got, ['otp *889*142#'], 'a code no handler accepts is dropped');

  const offUssd = handlers.register({ name: 'ussd', handle: (mo) => void got.push(`ussd ${mo.destination}`) });
  t.same(handlers.names(), ['ussd', 'otp'], 'asked latest first');
  got.length = 0;
  await handlers.dispatch(dial('*889*142#'));
  await handlers.dispatch(dial('*384#'));
  t.same(got, ['ussd *889*142#', 'ussd *384#'], 'a handler for every session, registered later, takes the OTP code too');

  offUssd();
  got.length = 0;
  await handlers.dispatch(dial('*384#'));
  await handlers.dispatch(dial('123', ' *889*142# '));
  t.same(got, ['otp 123'], 'after USSD stops, OTP answers its code again (dialled as the text too)');

  offOtp();
  offOtp();
  t.same(handlers.names(), [], 'unregistering twice is harmless');
});

t.test('one registration per name; the handler answer is returned for the caller to await', async (t) => {
  const handlers = new UssdMoHandlers();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  handlers.register({ name: 'otp', handle: () => held });
  t.throws(() => handlers.register({ name: 'otp', handle: () => undefined }), /already registered/);
  const out = handlers.dispatch(dial('*1#'));
  t.ok(out instanceof Promise, 'the handler promise reaches the gateway');
  release();
  await out;
});
