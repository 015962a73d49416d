import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { loadConfig } from '../config/load.js';
import { CHANNEL_MODULES } from '../channels/index.js';
import { adminTokenPath } from '../security/secrets.js';

export class CliError extends Error {
  override readonly name = 'CliError';
}

/** Where the daemon's admin API is and the token to use: FERRY_ADMIN_URL / FERRY_ADMIN_TOKEN, else from config and the data folder. */
export function adminTarget(configPath?: string): { url: string; token: string } {
  const { config } = loadConfig({ path: configPath ?? null, modules: CHANNEL_MODULES });
  const host = config.admin.host === '0.0.0.0' ? '127.0.0.1' : config.admin.host;
  const url = (process.env.FERRY_ADMIN_URL ?? `http://${host.includes(':') ? `[${host}]` : host}:${config.admin.port}`).replace(/\/+$/, '');
  let token = config.admin.token;
  if (!token) {
    const file = adminTokenPath(config.dataDir);
    if (!existsSync(file)) {
      throw new CliError(`no admin token: set FERRY_ADMIN_TOKEN, or run the CLI where the daemon's data folder is (${config.dataDir})`);
    }
    token = readFileSync(file, 'utf8').trim();
  }
  return { url, token };
}

/**
 * What the CLI calls itself in the admin API's X-Ferry-Actor header, logged by the daemon with every admin action and
 * kept with balance movements: `cli:` and the operating-system user (the one who ran sudo, under sudo).
 */
export function cliActor(): string {
  let user = process.env.SUDO_USER;
  if (!user) {
    try {
      user = userInfo().username;
    } catch {
      // No passwd entry for this uid (some containers).
      user = process.env.USER ?? process.env.LOGNAME ?? `uid${process.getuid?.() ?? ''}`;
    }
  }
  return `cli:${user}`;
}

/** Calls the admin API; returns `data` of the envelope or throws a CliError with the server's code and message. */
export async function adminCall<T = unknown>(target: { url: string; token: string }, method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(target.url + path, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        // The daemon sanitises and bounds it; a header value must be Latin-1, so anything else is replaced here.
        'x-ferry-actor': cliActor().replace(/[^\x20-\x7e]/g, '_').slice(0, 200),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(15000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new CliError(`cannot reach the Ferry admin API at ${target.url} (${cause}); is the daemon running? (FERRY_ADMIN_URL sets the address)`);
  }
  const text = await res.text();
  let json: { success?: boolean; code?: string; message?: string; data?: unknown };
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError(`unexpected answer from ${target.url}${path}: HTTP ${res.status}`);
  }
  if (!res.ok || json.success === false) {
    const details = (json.data as { errors?: { field: string; message: string }[] } | undefined)?.errors;
    const extra = details?.length ? ': ' + details.map((d) => `${d.field} ${d.message}`).join('; ') : '';
    throw new CliError(`${json.code ?? 'HTTP_' + res.status}: ${json.message ?? ''}${extra}`);
  }
  return json.data as T;
}
