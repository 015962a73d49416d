import { existsSync, readFileSync } from 'node:fs';
import { loadConfig } from '../config/load.js';
import { adminTokenPath } from '../security/secrets.js';

export class CliError extends Error {
  override readonly name = 'CliError';
}

/** Where the daemon's admin API is and the token to use: FERRY_ADMIN_URL / FERRY_ADMIN_TOKEN, else from config and the data folder. */
export function adminTarget(configPath?: string): { url: string; token: string } {
  const { config } = loadConfig({ path: configPath ?? null });
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

/** Calls the admin API; returns `data` of the envelope or throws a CliError with the server's code and message. */
export async function adminCall<T = unknown>(target: { url: string; token: string }, method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(target.url + path, {
      method,
      headers: { authorization: `Bearer ${target.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
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
