/**
 * Writes config/ferry.example.yaml from the config schema: every key, its default, its
 * environment variable and what it does. `npm run config:example`; a test checks it is current.
 */
import { parse as parseYaml } from 'yaml';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHANNEL_MODULES } from '../src/channels/index.js';
import { buildConfigSchema } from '../src/config/module-sections.js';
import { envKeys } from '../src/config/load.js';
import { packageRoot } from '../src/util/paths.js';

interface Node {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  default?: unknown;
  description?: string;
  properties?: Record<string, Node>;
  items?: Node;
  required?: readonly string[];
}

const aliases = new Map<string, string[]>();
for (const e of envKeys(CHANNEL_MODULES)) aliases.set(e.path, [...(aliases.get(e.path) ?? []), e.env]);

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  // Quoted when YAML would read it as something else (a number, a boolean, null).
  if (typeof v === 'string') return /^[\w./-]+$/.test(v) && parseYaml(v) === v ? v : JSON.stringify(v);
  return String(v);
}

function render(node: Node, path: string[], indent: string, out: string[]): void {
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const p = [...path, key].join('.');
    const notes: string[] = [];
    if (child.description) notes.push(child.description);
    if (child.enum) notes.push(`one of: ${child.enum.join(', ')}`);
    const envs = aliases.get(p);
    if (envs) notes.push(`env: ${envs.join(' or ')}`);
    for (const n of notes) out.push(`${indent}# ${n}`);
    if (child.properties) {
      out.push(`${indent}${key}:`);
      render(child, [...path, key], indent + '  ', out);
    } else if (child.items?.properties) {
      out.push(`${indent}${key}: []`);
      out.push(`${indent}# each item:`);
      for (const [ik, iv] of Object.entries(child.items.properties)) {
        const req = child.items.required?.includes(ik) ? ' (required)' : '';
        const def = iv.default !== undefined && typeof iv.default !== 'object' ? ` default ${scalar(iv.default)}` : '';
        const what = iv.description ? ` - ${iv.description}` : iv.enum ? ` - one of ${iv.enum.join(', ')}` : '';
        out.push(`${indent}#   ${ik}${req}${def}${what}`);
      }
    } else {
      out.push(`${indent}${key}: ${scalar(child.default)}`);
    }
  }
}

export function exampleConfig(): string {
  const out = [
    '# Ferry configuration: every key with its default.',
    '# Pass the file with `ferry start --config PATH` or FERRY_CONFIG=PATH. Every scalar key can also be',
    '# set from the environment (named beside it), which wins over the file.',
    "# Generated from src/config/schema.ts and each module's config section by `npm run config:example`; do not edit by hand.",
    '',
  ];
  render(buildConfigSchema(CHANNEL_MODULES) as unknown as Node, [], '', out);
  return out.join('\n') + '\n';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(join(packageRoot, 'config/ferry.example.yaml'), exampleConfig());
}
