// A hash of what `npm run build` compiles: every .ts file under src/ (path and content) and the tsconfig files.
// Plain JavaScript, as the test loader (ts-register.mjs) needs it before any TypeScript can load.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** @param {string} root the package's folder @returns {string} */
export function sourceHash(root) {
  const hash = createHash('sha256');
  /** @type {string[]} */
  const files = [];
  /** @param {string} dir */
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.push(path);
    }
  };
  walk(join(root, 'src'));
  files.push(join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json'));
  for (const file of files.sort()) {
    hash.update(relative(root, file)).update('\0');
    hash.update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}
