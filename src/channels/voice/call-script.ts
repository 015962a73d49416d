/**
 * What a call does once answered: a short script of steps (`say`, `play`, `pause`, `gather`, `hangup`), the shape
 * POST /v1/voice/calls takes either as `say`/`play` alone or as `script`. Validated by the route schema; this file
 * holds the types and the checks a schema cannot state.
 */
export type CallStep =
  | { say: { text: string; locale?: string; voice?: string; loop?: number } }
  | { play: { url: string; loop?: number } }
  | { pause: { seconds: number } }
  | { gather: { digits?: number; timeoutMs?: number; finishOnKey?: string; prompt?: { say?: { text: string; locale?: string; voice?: string }; play?: { url: string } } } }
  | { hangup: Record<string, never> };

export const MAX_SCRIPT_STEPS = 20;
export const MAX_SAY_CHARS = 1000;

/** The steps of a call from the request's `say`, `play` or `script` (exactly one of them), or a reason it is refused. */
export function scriptOf(input: { say?: { text: string; locale?: string; voice?: string }; play?: { url: string }; script?: CallStep[] }): { steps: CallStep[] } | { error: string; field: string } {
  const given = [input.say !== undefined, input.play !== undefined, input.script !== undefined].filter(Boolean).length;
  if (given !== 1) return { error: 'give exactly one of say, play or script', field: given ? 'script' : 'say' };
  if (input.say) return { steps: [{ say: input.say }] };
  if (input.play) return { steps: [{ play: input.play }] };
  const steps = input.script ?? [];
  if (!steps.length) return { error: 'a script needs at least one step', field: 'script' };
  if (steps.length > MAX_SCRIPT_STEPS) return { error: `a script has at most ${MAX_SCRIPT_STEPS} steps`, field: 'script' };
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    const kinds = Object.keys(step);
    if (kinds.length !== 1) return { error: `step ${i} must have exactly one of say, play, pause, gather, hangup`, field: `script[${i}]` };
    if ('gather' in step) {
      const g = step.gather;
      if (g.finishOnKey !== undefined && !/^[0-9*#]?$/.test(g.finishOnKey)) return { error: 'finishOnKey is one of 0-9, * or #, or empty', field: `script[${i}].gather.finishOnKey` };
      if (g.prompt && [g.prompt.say, g.prompt.play].filter(Boolean).length !== 1) return { error: 'a gather prompt has exactly one of say or play', field: `script[${i}].gather.prompt` };
    }
  }
  return { steps };
}

/** The URLs a script fetches (each goes through the SSRF guard when the call plays it, and is checked when it is placed). */
export function urlsOf(steps: readonly CallStep[]): string[] {
  const out: string[] = [];
  for (const s of steps) {
    if ('play' in s) out.push(s.play.url);
    if ('gather' in s && s.gather.prompt?.play) out.push(s.gather.prompt.play.url);
  }
  return out;
}
