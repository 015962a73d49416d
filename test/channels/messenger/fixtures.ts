import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = join(fileURLToPath(new URL('.', import.meta.url)), 'fixtures');

/** A fixture's text with {{name}} placeholders filled. */
export function fixture(name: string, vars: Record<string, string> = {}): string {
  return readFileSync(join(DIR, name), 'utf8').replace(/\{\{(\w+)\}\}/g, (_, k: string) => vars[k] ?? '').trim();
}

export function sign(secret: string, raw: string): string {
  return 'sha256=' + createHmac('sha256', secret).update(raw).digest('hex');
}
