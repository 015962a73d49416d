import { coreConfigSchema } from './schema.js';

/** A module's part of the config: its top-level key and the JSON schema of that section (an object with defaults). */
export interface ConfigSectionDeclaration {
  readonly key: string;
  readonly schema: object;
}

/** What the config needs of a module: its name (named in messages) and its section, if it has one. */
export interface ConfigSectionOwner {
  readonly name: string;
  readonly config?: ConfigSectionDeclaration;
}

/** The whole config schema: the core's sections, then each module's in list order. */
export type ConfigSchema = typeof coreConfigSchema & { properties: Record<string, object> };

/**
 * The core's schema with the sections of these modules added. The list comes from the composition root (the CLI,
 * src/channels/index.ts): the config never imports a product. Two modules declaring one key, or a module declaring a
 * core section, is a programming error that stops the boot, naming both.
 */
export function buildConfigSchema(modules: readonly ConfigSectionOwner[]): ConfigSchema {
  const properties: Record<string, object> = { ...coreConfigSchema.properties };
  const owners = new Map<string, string>();
  for (const m of modules) {
    if (!m.config) continue;
    const { key } = m.config;
    if (Object.hasOwn(coreConfigSchema.properties, key)) throw new Error(`module ${m.name} declares the config section ${key}, which is a section of the core`);
    const other = owners.get(key);
    if (other !== undefined) throw new Error(`the config section ${key} is declared by two modules: ${other} and ${m.name}`);
    owners.set(key, m.name);
    properties[key] = m.config.schema;
  }
  return { ...coreConfigSchema, properties } as ConfigSchema;
}
