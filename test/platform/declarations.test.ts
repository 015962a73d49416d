// What a module declares besides its code (config section, error codes, scopes) is merged by the core at boot; a
// declaration that clashes stops the boot with a message naming both sides.
import t from 'tap';
import { parseScopes, scopeCatalogue, SCOPES } from '../../src/accounts/scopes.js';
import { ApiError, errorCatalogue, errorEntry, type ErrorCode } from '../../src/http/errors.js';
import type { ChannelModule } from '../../src/platform/channel-module.js';
import { ModuleHost } from '../../src/platform/module-host.js';

/** A module of these tests only. */
function testModule(name: string, extra: Partial<ChannelModule> = {}): ChannelModule {
  return {
    name,
    maturity: 'alpha',
    tag: { name, description: `${name} (test)` },
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

t.test("scopes: a module's join the catalogue at boot, and keys accept them", async (t) => {
  t.throws(() => parseScopes('declscope:use'), /unknown scope: declscope:use/, 'unknown before its module boots');
  new ModuleHost([testModule('declscope', { scopes: { 'declscope:use': 'use the test thing' }, scopeNamespaces: ['declalias'] })]);
  t.ok(SCOPES.includes('declscope:use' as never), 'in the merged list');
  t.equal(scopeCatalogue()['declscope:use'], 'use the test thing', 'with its description, for the API description');
  t.same(parseScopes('declscope:use, account:read'), ['declscope:use', 'account:read'], 'a key may be made with it');
  t.ok(SCOPES.includes('push:send' as never), 'planned scopes stay accepted');
});

t.test('a scope outside the module namespace stops the boot', async (t) => {
  t.throws(() => new ModuleHost([testModule('declns', { scopes: { 'email:send': 'send email' } })]), /module declns declares the scope email:send outside its namespace \(declns:…\)/);
  t.throws(() => new ModuleHost([testModule('declns', { scopes: { declns: 'no colon' } })]), /outside its namespace/);
  t.throws(() => new ModuleHost([testModule('declns', { scopes: { 'declns:': 'no action' } })]), /outside its namespace/);
  t.doesNotThrow(() => new ModuleHost([testModule('declns', { scopes: { 'declother:read': 'read' }, scopeNamespaces: ['declother'] })]), 'a namespace it declares');
  t.throws(() => new ModuleHost([testModule('account', { scopes: { 'account:read': 'mine' } })]), /module account declares the scope account:read, which is a scope of the core/);
  t.throws(
    () => new ModuleHost([testModule('decldup-a', { scopes: { 'decldup:x': 'a' } }), testModule('decldup-b', { scopes: { 'decldup:x': 'b' }, scopeNamespaces: ['decldup'] })]),
    /module decldup-a declares the scope decldup:x outside its namespace/,
  );
  new ModuleHost([testModule('decldup', { scopes: { 'decldup:x': 'a' } })]);
  t.throws(() => new ModuleHost([testModule('decldup-b', { scopes: { 'decldup:x': 'b' }, scopeNamespaces: ['decldup'] })]), /the scope decldup:x is declared twice: by module decldup and by module decldup-b/);
});

t.test('a planned scope is taken over by the module that arrives for it', async (t) => {
  new ModuleHost([testModule('push', { scopes: { 'push:send': 'send push notifications' } })]);
  t.equal(scopeCatalogue()['push:send'], 'send push notifications');
  t.equal(SCOPES.filter((s) => s === 'push:send').length, 1, 'listed once');
});
