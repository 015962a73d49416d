// What a module declares besides its code (config section, error codes, scopes) is merged by the core at boot; a
// declaration that clashes stops the boot with a message naming both sides.
import t from 'tap';
import { ApiError, errorCatalogue, errorEntry, type ErrorCode } from '../../src/http/errors.js';
import type { ChannelModule } from '../../src/platform/channel-module.js';
import { ModuleHost } from '../../src/platform/module-host.js';

/** A module of these tests only. */
function testModule(name: string, extra: Partial<ChannelModule> = {}): ChannelModule {
  return {
    name,
    maturity: 'alpha',
    tag: { name, description: `${name} (test)` },
    scopes: [],
    async create() {
      return { service: null };
    },
    ...extra,
  };
}

t.test('error codes: merged at boot, each with its status', async (t) => {
  new ModuleHost([testModule('declerr-a', { errors: { DECLERR_GONE: { status: 410, message: 'It went away' } } })]);
  t.same(errorEntry('DECLERR_GONE'), { status: 410, message: 'It went away' });
  t.same(errorCatalogue().DECLERR_GONE, { status: 410, message: 'It went away' }, 'in the one catalogue');
  const e = new ApiError('DECLERR_GONE' as ErrorCode);
  t.equal(e.status, 410, "the HTTP status is the catalogue's");
  t.equal(e.message, 'It went away', 'the default message too');
  t.doesNotThrow(() => new ModuleHost([testModule('declerr-a', { errors: { DECLERR_GONE: { status: 410, message: 'It went away' } } })]), 'the same module booting again keeps its codes');
});

t.test('an error code declared by two modules stops the boot, naming both', async (t) => {
  const a = testModule('declerr-b', { errors: { DECLERR_TWICE: { status: 409, message: 'one' } } });
  const b = testModule('declerr-c', { errors: { DECLERR_TWICE: { status: 422, message: 'two' } } });
  t.throws(() => new ModuleHost([a, b]), /error code DECLERR_TWICE is declared twice: by module declerr-b and by module declerr-c/);
  t.equal(errorEntry('DECLERR_TWICE'), undefined, 'nothing of the failed boot is installed');
});

t.test('an error code of the core declared by a module stops the boot', async (t) => {
  const rogue = testModule('declerr-d', { errors: { NOT_FOUND: { status: 404, message: 'mine' } } });
  t.throws(() => new ModuleHost([rogue]), /error code NOT_FOUND is declared twice: by the core and by module declerr-d/);
  t.equal(errorEntry('NOT_FOUND')?.message, 'No such endpoint', "the core's entry is kept");
});

t.test('a config section declared by two modules stops the boot, naming both', async (t) => {
  const schema = { type: 'object', default: {} };
  t.throws(
    () => new ModuleHost([testModule('declcfg-a', { config: { key: 'declcfg', schema } }), testModule('declcfg-b', { config: { key: 'declcfg', schema } })]),
    /the config section declcfg is declared by two modules: declcfg-a and declcfg-b/,
  );
});
