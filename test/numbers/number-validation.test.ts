import t from 'tap';
import { accepts, effectiveValidation } from '../../src/numbers/number-validation.js';

t.test('each policy accepts its grade and the better ones', async (t) => {
  t.same(['valid', 'possible', 'digits'].map((g) => accepts('strict', g as 'valid')), [true, false, false]);
  t.same(['valid', 'possible', 'digits'].map((g) => accepts('possible', g as 'valid')), [true, true, false]);
  t.same(['valid', 'possible', 'digits'].map((g) => accepts('off', g as 'valid')), [true, true, true]);
});

t.test('the stricter of account and route when either is set, else the ingress default', async (t) => {
  t.equal(effectiveValidation(null, null, 'possible'), 'possible');
  t.equal(effectiveValidation(null, null, 'strict'), 'strict');
  t.equal(effectiveValidation('strict', null, 'possible'), 'strict', 'the account tightens the default');
  t.equal(effectiveValidation('off', null, 'strict'), 'off', 'and may loosen it');
  t.equal(effectiveValidation(null, 'off', 'strict'), 'off', 'so may the route');
  t.equal(effectiveValidation('off', 'strict', 'possible'), 'strict', 'an account cannot loosen a strict route');
  t.equal(effectiveValidation('strict', 'off', 'possible'), 'strict', 'nor a route a strict account');
  t.equal(effectiveValidation('possible', 'off', 'strict'), 'possible');
});
