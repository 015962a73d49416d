import { createRequire } from 'node:module';

let bundling: Promise<string> | null = null;

/**
 * JsSIP for the browser: the npm package ships CommonJS only, so it is bundled (esbuild, loaded on first use) into one
 * script defining `JsSIP`, once per process on the page's first visit, and kept in memory.
 */
export function jssipBrowserBundle(): Promise<string> {
  bundling ??= (async () => {
    const { build } = await import('esbuild');
    const entry = createRequire(import.meta.url).resolve('jssip');
    const out = await build({ entryPoints: [entry], bundle: true, format: 'iife', globalName: 'JsSIP', platform: 'browser', target: 'es2019', minify: true, write: false, logLevel: 'silent', legalComments: 'inline' });
    // The iife leaves the module namespace in JsSIP; the library is its default export.
    return `${out.outputFiles[0].text}\nif (JsSIP && JsSIP.default) JsSIP = JsSIP.default;\n`;
  })().catch((err: unknown) => {
    bundling = null;
    throw err;
  });
  return bundling;
}
