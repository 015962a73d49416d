// The layer rules of eslint.config.js, run through ESLint on small sources so that a config change cannot silently
// switch them off: the core never imports a product; the composition roots import only the module list; a product
// reaches another only `import type` from its index.ts; src/smpp imports no SMS core.
import { ESLint } from 'eslint';
import t from 'tap';
import { packageRoot } from '../../src/util/paths.js';

const RULE = '@typescript-eslint/no-restricted-imports';
const eslint = new ESLint({ cwd: packageRoot });

/** The layer-rule messages ESLint reports for `code` as if it were the file at `filePath` (relative to the repository). */
async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  t.ok(result, `${filePath} is linted (not ignored)`);
  return result.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

t.test('the core never imports a product', async (t) => {
  t.same(await layerErrors('src/accounts/layers-fixture.ts', `import { readNumber } from '../numbers/phone.js';\nexport const r = readNumber;\n`), [], 'the numbers layer is core');
  t.same(await layerErrors('src/accounts/layers-fixture.ts', `import type { SmsApi } from '../messaging/types.js';\nexport type S = SmsApi;\n`), [], 'the messaging layer is core');
  const value = await layerErrors('src/accounts/layers-fixture.ts', `import { smsModule } from '../channels/sms/index.js';\nexport const m = smsModule;\n`);
  t.equal(value.length, 1, 'a core folder importing a product');
  t.match(value[0], /core never imports a product/);
  const typeOnly = await layerErrors('src/routing/layers-fixture.ts', `import type { OtpService } from '../channels/otp/index.js';\nexport type O = OtpService;\n`);
  t.equal(typeOnly.length, 1, 'not even a type');
  t.equal((await layerErrors('src/smpp/customer/layers-fixture.ts', `export { CHANNEL_MODULES } from '../../channels/index.js';\n`)).length, 1, 're-exports count; the module list is not for the core');
});

t.test('the composition roots import the products only through their list', async (t) => {
  t.same(await layerErrors('src/daemon.ts', `import { CHANNEL_MODULES } from './channels/index.js';\nexport const m = CHANNEL_MODULES;\n`), [], 'the daemon: the module list');
  t.same(await layerErrors('src/cli/commands/layers-fixture.ts', `import { CHANNEL_MODULES } from '../../channels/index.js';\nexport const m = CHANNEL_MODULES;\n`), [], 'the CLI: the module list');
  const deep = await layerErrors('src/cli/commands/layers-fixture.ts', `import type { SmsGateway } from '../../channels/sms/sms-gateway.js';\nexport type G = SmsGateway;\n`);
  t.equal(deep.length, 1, 'the CLI reaching into a product');
  t.match(deep[0], /only through their list/);
});

t.test('a product reaches another only import type from its index.ts', async (t) => {
  const legal = [
    `import type { OtpService } from '../otp/index.js';`,
    `import type { WebhookService } from '../webhooks/index.js';`,
    `import { displayCode } from './service-code.js';`,
    `import { readNumber } from '../../numbers/phone.js';`,
    `export type Used = [OtpService, WebhookService, typeof displayCode, typeof readNumber];`,
  ].join('\n');
  t.same(await layerErrors('src/channels/ussd/layers-fixture.ts', legal + '\n'), [], 'types from another index.ts, its own files, the core');
  const valueOfIndex = await layerErrors('src/channels/ussd/layers-fixture.ts', `import { otpModule } from '../otp/index.js';\nexport const m = otpModule;\n`);
  t.equal(valueOfIndex.length, 1, 'a value from another product (the object comes from ctx.use())');
  t.match(valueOfIndex[0], /import type only/);
  const internal = await layerErrors('src/channels/ussd/dialects/layers-fixture.ts', `import type { UssdOtpFallback } from '../../otp/ussd-otp-fallback.js';\nexport type F = UssdOtpFallback;\n`);
  t.equal(internal.length, 1, "another product's file, even as a type, from a subfolder");
  t.match(internal[0], /only through its service/);
  t.equal((await layerErrors('src/channels/otp/layers-fixture.ts', `import { SmsStartupError } from '../../channels/sms/sms-gateway.js';\nexport const e = SmsStartupError;\n`)).length, 1, 'by way of ../../channels/ as well');
});

t.test('src/smpp is a protocol library', async (t) => {
  t.same(await layerErrors('src/smpp/customer/layers-fixture.ts', `import type { Db } from '../../store/types.js';\nexport type D = Db;\n`), []);
  const errors = await layerErrors('src/smpp/customer/layers-fixture.ts', `import type { SmsIngress } from '../../messaging/types.js';\nimport type { MessageStatus } from '../../ledger/types.js';\nexport type X = [SmsIngress, MessageStatus];\n`);
  t.equal(errors.length, 2, 'neither the SMS core nor the ledger');
});

t.test('the voice libraries are protocol libraries', async (t) => {
  t.same(await layerErrors('src/sip/layers-fixture.ts', `import { newId } from '../util/ids.js';\nexport const f = newId;\n`), [], 'utilities are fine');
  const errors = await layerErrors('src/rtp/layers-fixture.ts', `import type { Db } from '../platform/channel-module.js';\nimport type { Ledger } from '../ledger/ledger.js';\nexport type X = [Db, Ledger];\n`);
  t.equal(errors.length, 2, 'neither the platform nor the ledger');
  t.match(errors[0], /protocol libraries/);
  t.equal((await layerErrors('src/speech/layers-fixture.ts', `import type { X } from '../channels/voice/index.js';\nexport type Y = X;\n`)).length, 1, 'nor a product');
  t.equal((await layerErrors('src/llm/layers-fixture.ts', `import type { Db } from '../platform/channel-module.js';\nexport type X = Db;\n`)).length, 1, 'the language-model adapter neither');
});

t.test('the source tree holds the rules today', async (t) => {
  const results = await eslint.lintFiles(['src/daemon.ts', 'src/smpp', 'src/sip', 'src/rtp', 'src/audio', 'src/speech', 'src/llm', 'src/messaging', 'src/numbers', 'src/channels/otp', 'src/channels/ussd/index.ts']);
  const broken = results.flatMap((r) => r.messages.filter((m) => m.ruleId === RULE).map((m) => `${r.filePath}:${m.line} ${m.message}`));
  t.same(broken, []);
});
