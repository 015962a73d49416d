import { canonicalName, headerKey } from './header-names.js';

/** Ordered SIP headers; lookups are case-insensitive and know the compact forms. */
export class SipHeaders {
  private readonly names: string[] = [];
  private readonly keys: string[] = [];
  private readonly values: string[] = [];

  constructor(init?: Iterable<readonly [string, string]>) {
    if (init) for (const [n, v] of init) this.append(n, v);
  }

  get size(): number {
    return this.names.length;
  }

  get(name: string): string | undefined {
    const key = headerKey(name);
    const i = this.keys.indexOf(key);
    return i < 0 ? undefined : this.values[i];
  }

  getAll(name: string): string[] {
    const key = headerKey(name);
    const out: string[] = [];
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i] === key) out.push(this.values[i]);
    return out;
  }

  has(name: string): boolean {
    return this.keys.includes(headerKey(name));
  }

  append(name: string, value: string): this {
    this.names.push(canonicalName(name));
    this.keys.push(headerKey(name));
    this.values.push(value);
    return this;
  }

  /** Puts a value before the first of its name (a new top Via), or first of all when there is none. */
  prepend(name: string, value: string): this {
    const key = headerKey(name);
    const i = Math.max(0, this.keys.indexOf(key));
    this.names.splice(i, 0, canonicalName(name));
    this.keys.splice(i, 0, key);
    this.values.splice(i, 0, value);
    return this;
  }

  /** Replaces every value of that name with one (in place of the first, else at the end). */
  set(name: string, value: string): this {
    const key = headerKey(name);
    const i = this.keys.indexOf(key);
    if (i < 0) return this.append(name, value);
    this.values[i] = value;
    for (let j = this.keys.length - 1; j > i; j--) if (this.keys[j] === key) this.removeAt(j);
    return this;
  }

  delete(name: string): this {
    const key = headerKey(name);
    for (let j = this.keys.length - 1; j >= 0; j--) if (this.keys[j] === key) this.removeAt(j);
    return this;
  }

  *entries(): IterableIterator<[string, string]> {
    for (let i = 0; i < this.names.length; i++) yield [this.names[i], this.values[i]];
  }

  clone(): SipHeaders {
    return new SipHeaders(this.entries());
  }

  private removeAt(i: number): void {
    this.names.splice(i, 1);
    this.keys.splice(i, 1);
    this.values.splice(i, 1);
  }
}
