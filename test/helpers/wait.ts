/** Resolves once `cond()` holds, polling every 5 ms; rejects after `limitMs`. */
export function waitFor(cond: () => boolean, limitMs = 5000, what = 'condition'): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (cond()) return resolve();
      if (Date.now() - start > limitMs) return reject(new Error(`${what} not reached within ${limitMs} ms`));
      setTimeout(check, 5);
    };
    check();
  });
}

/** Polls `fn` every 20 ms until `done(value)`; rejects after `limitMs` with the last value. */
export async function until<T>(fn: () => T | Promise<T>, done: (v: T) => boolean, limitMs = 15_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (done(v)) return v;
    if (Date.now() - start > limitMs) throw new Error(`not reached within ${limitMs} ms; last: ${JSON.stringify(v)?.slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
