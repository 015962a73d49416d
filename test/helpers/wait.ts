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
