import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import AjvModule, { type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import type { FerryConfig } from './schema.js';
import { buildConfigSchema, type ConfigSchema, type ConfigSectionOwner } from './module-sections.js';
import { SIMULATOR_UPSTREAM_ID } from '../sim/smpp/simulator-record.js';
import { normalizeTrustProxy } from '../http/client-address.js';

// ajv ships CommonJS; under NodeNext its default export sits one level down.
const Ajv = ((AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule) as unknown as typeof AjvModule.default;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
  }
}

/** Environment names that are not derived from the key path. */
const ENV_ALIASES: Record<string, string> = {
  DATABASE_URL: 'database.url',
  DATABASE_READ_URL: 'database.readUrl',
  REDIS_URL: 'redis.url',
  FERRY_ROLE: 'roles',
};

interface SchemaNode {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  properties?: Record<string, SchemaNode>;
}

/**
 * Every scalar key of the schema (the core's and the given modules' sections) with its FERRY_* environment name:
 * http.bodyLimitBytes → FERRY_HTTP_BODY_LIMIT_BYTES, email.smtp.url → FERRY_EMAIL_SMTP_URL.
 */
export function envKeys(modules: readonly ConfigSectionOwner[]): { env: string; path: string; node: SchemaNode }[] {
  return envKeysOf(buildConfigSchema(modules));
}

function envKeysOf(schema: ConfigSchema): { env: string; path: string; node: SchemaNode }[] {
  const out: { env: string; path: string; node: SchemaNode }[] = [];
  const walk = (node: SchemaNode, path: string[]) => {
    if (node.properties) {
      for (const [k, child] of Object.entries(node.properties)) walk(child, [...path, k]);
      return;
    }
    const types = ([] as string[]).concat((node.type as string | string[] | undefined) ?? []);
    // A list that may also be written as one comma-separated string (http.trustProxy) has an environment variable.
    if ((types.includes('array') && !types.includes('string')) || types.includes('object')) return;
    const env = 'FERRY_' + path.map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
    out.push({ env, path: path.join('.'), node });
  };
  walk(schema as unknown as SchemaNode, []);
  for (const [env, path] of Object.entries(ENV_ALIASES)) {
    const entry = out.find((e) => e.path === path)!;
    out.push({ env, path, node: entry.node });
  }
  return out;
}

function coerceEnv(raw: string, node: SchemaNode): unknown {
  const types = ([] as string[]).concat((node.type as string | string[] | undefined) ?? []);
  if (types.includes('integer') || types.includes('number')) {
    const n = Number(raw);
    return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
  }
  if (types.includes('boolean')) {
    if (/^(true|1|yes|on)$/i.test(raw)) return true;
    if (/^(false|0|no|off)$/i.test(raw)) return false;
    return raw;
  }
  if (types.includes('null') && raw === '') return null;
  return raw;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const p of parts.slice(0, -1)) {
    if (typeof cur[p] !== 'object' || cur[p] === null || Array.isArray(cur[p])) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]] = value;
}

function describe(err: ErrorObject): string {
  const at = err.instancePath ? err.instancePath.slice(1).replace(/\//g, '.') : '(top level)';
  switch (err.keyword) {
    case 'additionalProperties':
      return `${at === '(top level)' ? '' : at + '.'}${(err.params as { additionalProperty: string }).additionalProperty}: unknown key`;
    case 'enum':
      return `${at}: must be one of ${(err.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    case 'required':
      return `${at}: missing required key ${(err.params as { missingProperty: string }).missingProperty}`;
    default:
      return `${at}: ${err.message}`;
  }
}

type Validator = ReturnType<InstanceType<typeof Ajv>['compile']>;

/** The schema and its compiled validator per module list: a list is usually the one constant of the composition root. */
const compiled = new WeakMap<readonly ConfigSectionOwner[], { schema: ConfigSchema; validate: Validator }>();

function compile(modules: readonly ConfigSectionOwner[]): { schema: ConfigSchema; validate: Validator } {
  let c = compiled.get(modules);
  if (!c) {
    const schema = buildConfigSchema(modules);
    c = { schema, validate: new Ajv({ allErrors: true, useDefaults: true, strict: false }).compile(schema) };
    compiled.set(modules, c);
  }
  return c;
}

export interface LoadOptions {
  /** Config file; else FERRY_CONFIG; else none (defaults + environment). */
  path?: string | null;
  env?: NodeJS.ProcessEnv;
  /**
   * The modules whose sections the config may hold (from the composition root, e.g. CHANNEL_MODULES); a key of a
   * module not in the list is an unknown key.
   */
  modules: readonly ConfigSectionOwner[];
}

export interface LoadedConfig {
  config: FerryConfig;
  /** Where the file came from, if any. */
  source: string | null;
}

/** Reads YAML, applies the environment on top, fills defaults and validates. Throws ConfigError listing every problem. */
export function loadConfig(opts: LoadOptions): LoadedConfig {
  const env = opts.env ?? process.env;
  const { schema, validate } = compile(opts.modules);
  const file = opts.path ?? env.FERRY_CONFIG ?? null;
  const problems: string[] = [];
  let raw: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError([`cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`]);
    }
    try {
      const parsed = parseYaml(text) as unknown;
      if (parsed !== null && parsed !== undefined) {
        if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the top level must be a mapping');
        raw = parsed as Record<string, unknown>;
      }
    } catch (err) {
      throw new ConfigError([`cannot parse ${file}: ${(err as Error).message.split('\n')[0]}`]);
    }
  }

  for (const { env: name, path, node } of envKeysOf(schema)) {
    const v = env[name];
    if (v === undefined) continue;
    const value = coerceEnv(v, node);
    setPath(raw, path, value);
  }

  if (!validate(raw)) {
    for (const e of validate.errors ?? []) problems.push(describe(e));
  }
  const config = raw as unknown as FerryConfig;
  if (!problems.length) {
    const trust = normalizeTrustProxy(config.http.trustProxy);
    config.http.trustProxy = trust.value;
    problems.push(...trust.problems);
  }
  if (!problems.length) problems.push(...crossChecks(config));
  if (problems.length) throw new ConfigError([...new Set(problems)]);
  config.dataDir = resolve(config.dataDir);
  return { config, source: file };
}

/** Rules a JSON schema cannot say: references between keys. */
function crossChecks(c: FerryConfig): string[] {
  const out: string[] = [];
  if (c.database.readUrl && !c.database.url) {
    out.push('database.readUrl: a read replica needs database.url (Postgres); the embedded database (PGlite) has no replicas');
  }
  const ids = new Set<string>();
  c.smpp.upstreams.forEach((u, i) => {
    if (ids.has(u.id)) out.push(`smpp.upstreams.${i}.id: duplicate upstream id ${u.id}`);
    if (u.id === SIMULATOR_UPSTREAM_ID) out.push(`smpp.upstreams.${i}.id: ${u.id} is reserved for the embedded SMSC simulator`);
    ids.add(u.id);
  });
  // The simulator is a routing target only when the operator names it (enabled: on), and only on its own: a rule
  // that lists it beside a real upstream would fail a carrier's traffic over to it and report it delivered.
  const simulatorNamed = c.smpp.simulator.enabled === 'on';
  const ruleIds = new Set<string>();
  c.routing.rules.forEach((r, i) => {
    if (ruleIds.has(r.id)) out.push(`routing.rules.${i}.id: duplicate rule id ${r.id}`);
    ruleIds.add(r.id);
    r.upstreams.forEach((u, j) => {
      if (u === SIMULATOR_UPSTREAM_ID) {
        if (!simulatorNamed) out.push(`routing.rules.${i}.upstreams.${j}: ${u} is the embedded simulator, a routing target only with smpp.simulator.enabled: on`);
        else if (r.upstreams.length > 1) out.push(`routing.rules.${i}.upstreams: the embedded simulator may be a rule's only upstream, never beside others`);
      } else if (!ids.has(u)) out.push(`routing.rules.${i}.upstreams.${j}: unknown upstream ${u}`);
    });
    if (r.weights && r.weights.length !== r.upstreams.length) out.push(`routing.rules.${i}.weights: must have one weight per upstream`);
  });
  if (c.smpp.tls.enabled && (!c.smpp.tls.cert || !c.smpp.tls.key)) out.push('smpp.tls: cert and key are required when enabled');
  if (c.database.url && !/^postgres(ql)?:\/\//.test(c.database.url)) out.push('database.url: must start with postgres:// or postgresql://');
  if (c.redis.url && !/^rediss?:\/\//.test(c.redis.url)) out.push('redis.url: must start with redis:// or rediss://');
  return out;
}
