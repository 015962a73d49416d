/**
 * The `openai` SDK, loaded on first use: importing it costs ~0.1–0.35 s of CPU, which every process that merely
 * loads the gateway (each `ferry` CLI call, each test process) would otherwise pay for engines it never calls.
 */
export type OpenAiSdk = typeof import('openai');

let loading: Promise<OpenAiSdk> | undefined;

export function loadOpenAiSdk(): Promise<OpenAiSdk> {
  loading ??= import('openai');
  return loading;
}
