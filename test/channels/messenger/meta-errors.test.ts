// The one Cloud API error table, walked as a table over the platform's own error bodies (fixtures/error-*.json).
import t from 'tap';
import { classifyMetaError } from '../../../src/channels/messenger/providers/meta-errors.js';
import { fixture } from './fixtures.js';

const rows: Array<{ file: string; http: number; first: Record<string, unknown>; second?: Record<string, unknown> }> = [
  { file: 'error-131026.json', http: 400, first: { kind: 'fail', code: 'WA002', providerCode: '131026' } },
  { file: 'error-131047.json', http: 400, first: { kind: 'fail', code: 'WA003', providerCode: '131047' } },
  { file: 'error-131053.json', http: 400, first: { kind: 'retry', code: 'WA004', providerHealthy: true }, second: { kind: 'fail', code: 'WA004', providerCode: '131053' } },
  { file: 'error-130429.json', http: 429, first: { kind: 'retry', code: 'WA005', throttled: true, providerCode: '130429' } },
];

t.test('the Cloud API error table', async (t) => {
  for (const r of rows) {
    const body = JSON.parse(fixture(r.file));
    const input = { providerCode: body.error.code, message: body.error.message, httpStatus: r.http };
    t.match(classifyMetaError(input, 0), r.first, `${r.file}: first attempt`);
    if (r.second) t.match(classifyMetaError(input, 1), r.second, `${r.file}: after a retry`);
  }
  for (const code of ['131056', '80007', '4']) t.match(classifyMetaError({ providerCode: code, httpStatus: 400 }, 0), { kind: 'retry', code: 'WA005', throttled: true }, `${code} backs off`);
  t.match(classifyMetaError({ providerCode: null, httpStatus: 503 }, 0), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' }, 'a 5xx without a code retries');
  t.match(classifyMetaError({ providerCode: '999999', httpStatus: 400 }, 0), { kind: 'fail', code: 'PROVIDER_REJECTED', providerCode: '999999' }, 'an unknown code fails with the code kept');
});
