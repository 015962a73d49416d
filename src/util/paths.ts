import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root (the folder holding package.json), found from this module whether it runs from src/ or dist/. */
export const packageRoot: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
})();

/** Assets (.sql, .lua) live in src/ and are read from there in both dev and built runs. */
export function assetPath(...parts: string[]): string {
  return join(packageRoot, 'src', ...parts);
}
