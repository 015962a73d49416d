import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

let cached: string | null = null;

/**
 * Socket.IO's browser client (the socket.io package's own build, so it always matches the server), read once. The chat
 * realtime side does not serve it (serveClient off): the inbox page and the widget get it from live chat's routes.
 */
export function socketIoClientSource(): string {
  if (cached === null) {
    const root = dirname(createRequire(import.meta.url).resolve('socket.io/package.json'));
    // Without its source-map comment: a page would ask for a map nobody serves.
    cached = readFileSync(join(root, 'client-dist', 'socket.io.min.js'), 'utf8').replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n');
  }
  return cached;
}

/**
 * The client wrapped so that it defines nothing on the page that embeds it (no global `io`, no AMD define): the
 * widget runs on customers' sites, which may have their own Socket.IO or a module loader. Evaluates to `io`.
 */
export function scopedSocketIoClient(): string {
  return `(function () { var module = { exports: {} }; var exports = module.exports; var define = undefined;\n${socketIoClientSource()}\nreturn module.exports; })()`;
}
