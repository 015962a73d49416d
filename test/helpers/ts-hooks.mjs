/* global URL */
// Module hooks for the test processes (registered by ts-register.mjs). Two jobs, both cheaper than a general
// TypeScript loader: an import of src/ is answered with dist/ when dist/ was compiled from the source as it is now
// (tap's `before` step builds it; ~300 modules need no transform then), and the remaining .ts files (the test file and
// its helpers, or src/ when dist/ is stale) are transformed by esbuild, as tsx would, with inline source maps.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transformSync } from 'esbuild';

let srcPrefix = '';
let distPrefix = '';
let useDist = false;

/** @param {{ root: string, useDist: boolean }} data */
export function initialize(data) {
  srcPrefix = pathToFileURL(data.root + '/src/').href;
  distPrefix = pathToFileURL(data.root + '/dist/').href;
  useDist = data.useDist;
}

/** @param {string} url */
const fileExists = (url) => existsSync(fileURLToPath(url));

export async function resolve(specifier, context, nextResolve) {
  const relativeOrFile = specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('file:');
  if (relativeOrFile && context.parentURL?.startsWith('file:')) {
    const url = new URL(specifier, context.parentURL);
    url.search = '';
    const href = url.href;
    if (useDist && href.startsWith(srcPrefix) && (href.endsWith('.js') || href.endsWith('.ts'))) {
      const compiled = distPrefix + href.slice(srcPrefix.length, -3) + '.js';
      if (fileExists(compiled)) return { url: compiled, format: 'module', shortCircuit: true };
    }
    if (href.endsWith('.ts') && fileExists(href)) return { url: href, format: 'module', shortCircuit: true };
    if (href.endsWith('.js') && !fileExists(href)) {
      const source = href.slice(0, -3) + '.ts';
      if (fileExists(source)) return { url: source, format: 'module', shortCircuit: true };
    }
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url.endsWith('.ts') && url.startsWith('file:')) {
    const path = fileURLToPath(url);
    const { code } = transformSync(readFileSync(path, 'utf8'), {
      loader: 'ts',
      format: 'esm',
      target: 'node20',
      sourcemap: 'inline',
      sourcefile: path,
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: false, useDefineForClassFields: true } },
    });
    return { format: 'module', source: code, shortCircuit: true };
  }
  return nextLoad(url, context);
}
