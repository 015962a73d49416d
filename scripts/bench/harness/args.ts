/** Tiny argv reader for the bench scripts: `--name value` and bare `--flag`. */

export class Args {
  constructor(private readonly argv: string[] = process.argv.slice(2)) {}

  has(name: string): boolean {
    return this.argv.includes(`--${name}`);
  }

  string(name: string): string | undefined;
  string(name: string, fallback: string): string;
  string(name: string, fallback?: string): string | undefined {
    const i = this.argv.indexOf(`--${name}`);
    if (i < 0) return fallback;
    const v = this.argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`--${name} needs a value`);
    return v;
  }

  number(name: string, fallback: number, opts: { min?: number; max?: number; integer?: boolean } = {}): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const n = Number(raw.replace(/_/g, ''));
    if (!Number.isFinite(n)) throw new UsageError(`--${name}: expected a number, got ${raw}`);
    if (opts.integer && !Number.isInteger(n)) throw new UsageError(`--${name}: expected an integer, got ${raw}`);
    if (opts.min !== undefined && n < opts.min) throw new UsageError(`--${name}: at least ${opts.min}`);
    if (opts.max !== undefined && n > opts.max) throw new UsageError(`--${name}: at most ${opts.max}`);
    return n;
  }

  /** Options given that are not in `known` (a typo should not silently run the defaults). */
  unknown(known: readonly string[]): string[] {
    const set = new Set(known);
    return this.argv.filter((a) => a.startsWith('--') && !set.has(a.slice(2)));
  }
}

/** A bad command line: printed with the usage, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
