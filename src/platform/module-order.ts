import { CORE_TABLES } from '../store/sql/core-tables.js';
import { checkTables, type TableDeclaration } from '../store/sql/table-declaration.js';
import type { ChannelModule } from './channel-module.js';

/**
 * Boot order from `dependsOn`: every module after the ones it depends on, otherwise in list order (a stable
 * topological sort). Throws on an unknown dependency, a duplicate name or a cycle, naming them.
 */
export function bootOrder<M extends Pick<ChannelModule, 'name' | 'dependsOn'>>(modules: readonly M[]): M[] {
  const byName = new Map<string, M>();
  for (const m of modules) {
    if (byName.has(m.name)) throw new Error(`module ${m.name} is listed twice`);
    byName.set(m.name, m);
  }
  for (const m of modules) {
    for (const d of m.dependsOn ?? []) if (!byName.has(d)) throw new Error(`module ${m.name} depends on ${d}, which is not in the list`);
  }
  const order: M[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (m: M, path: string[]): void => {
    const s = state.get(m.name);
    if (s === 'done') return;
    if (s === 'visiting') throw new Error(`modules depend on each other in a cycle: ${[...path, m.name].join(' -> ')}`);
    state.set(m.name, 'visiting');
    for (const d of m.dependsOn ?? []) visit(byName.get(d)!, [...path, m.name]);
    state.set(m.name, 'done');
    order.push(m);
  };
  for (const m of modules) visit(m, []);
  return order;
}

/** Every module's own migration folder (the core's are always loaded). */
export function migrationFolders(modules: readonly Pick<ChannelModule, 'migrations'>[]): string[] {
  return modules.flatMap((m) => (m.migrations ? [m.migrations] : []));
}

/** The core's declared tables, then each module's in the given (boot) order; checked (each table once, identifiers). */
export function declaredTables(modules: readonly Pick<ChannelModule, 'tables'>[]): readonly TableDeclaration[] {
  return checkTables([...CORE_TABLES, ...modules.flatMap((m) => m.tables ?? [])]);
}
