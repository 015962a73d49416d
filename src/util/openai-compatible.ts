/**
 * What every adapter of an OpenAI-compatible API (speech, transcription, chat) does the same way around the `openai`
 * SDK: load it on first use, send a third party's server only the headers the API needs, read an error answer to a
 * bounded size in OpenAI's {"error": {"message"}} shape, and read Retry-After.
 */

/** The SDK's module. */
export type OpenAiSdk = typeof import('openai');

let loading: Promise<OpenAiSdk> | undefined;

/**
 * The `openai` SDK, loaded on first use: importing it costs ~0.1–0.35 s of CPU, which every process that merely loads
 * the gateway (each `ferry` CLI call, each test process) would otherwise pay for adapters it never calls. A failed
 * load is tried again next time.
 */
export function loadOpenAiSdk(): Promise<OpenAiSdk> {
  loading ??= import('openai').catch((err: unknown) => {
    loading = undefined;
    throw err;
  });
  return loading;
}

/** The headers an OpenAI-compatible request needs; the SDK's X-Stainless-* telemetry and OPENAI_CUSTOM_HEADERS stay home. */
export const PROVIDER_HEADERS: readonly string[] = ['accept', 'authorization', 'content-type', 'user-agent'];

/** Only `names` of the request's headers (lower case), optionally without Authorization (a server that takes no key). */
export function providerHeaders(init: RequestInit | undefined, names: readonly string[] = PROVIDER_HEADERS, sendKey = true): Headers {
  const given = new Headers(init?.headers);
  const headers = new Headers();
  for (const name of names) {
    const value = given.get(name);
    if (value !== null && (sendKey || name !== 'authorization')) headers.set(name, value);
  }
  return headers;
}

/** Retry-After(-Ms) in milliseconds: seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

export const MAX_ERROR_BODY_BYTES = 16 * 1024;

/**
 * An error answer with its body read to at most 16 kB (the SDK reads it whole) and rewritten to OpenAI's
 * {"error": {"message"}} when it came in another common shape ({"detail": …}, {"error": "…"}, {"message": …}), so the
 * provider's words reach the error. `plainText: 'wrap'` also wraps a body that is no JSON at all.
 */
export async function boundedErrorAnswer(response: Response, plainText: 'keep' | 'wrap' = 'keep'): Promise<Response> {
  if (!response.body) return response;
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  // Each read adds at least one byte or ends the stream; the cap bounds the loop.
  while (total < MAX_ERROR_BODY_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    total += value.byteLength;
  }
  await reader.cancel().catch(() => undefined);
  const text = Buffer.concat(chunks, total).subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8');
  const answered = new Headers(response.headers);
  answered.delete('content-length');
  answered.delete('content-encoding');
  return new Response(normaliseErrorBody(text, plainText), { status: response.status, statusText: response.statusText, headers: answered });
}

function normaliseErrorBody(text: string, plainText: 'keep' | 'wrap'): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return plainText === 'wrap' ? JSON.stringify({ error: { message: text } }) : text;
  }
  if (typeof parsed !== 'object' || parsed === null) return text;
  const { error, detail, message } = parsed as { error?: unknown; detail?: unknown; message?: unknown };
  if (typeof error === 'string') return JSON.stringify({ error: { message: error } });
  if (error !== undefined) return text;
  const said = typeof detail === 'string' ? detail : typeof message === 'string' ? message : JSON.stringify(detail ?? parsed);
  return JSON.stringify({ error: { message: said } });
}
