/**
 * The DNS-rebinding guard of /mcp: a page on an attacker's name that resolves to the daemon must not reach it through
 * a victim's browser, so the Host header must name an allowed host, and an Origin header, when sent, an allowed origin.
 */
export class HostGuard {
  private readonly hosts: Set<string>;
  private readonly origins: Set<string>;

  constructor(opts: { allowedHosts: readonly string[]; allowedOrigins: readonly string[]; publicUrl: string | null }) {
    const hosts = ['localhost', '127.0.0.1', '[::1]', ...opts.allowedHosts];
    if (opts.publicUrl) hosts.push(new URL(opts.publicUrl).host, new URL(opts.publicUrl).hostname);
    this.hosts = new Set(hosts.map((h) => h.toLowerCase()));
    this.origins = new Set(opts.allowedOrigins.map((o) => o.toLowerCase().replace(/\/$/, '')));
  }

  /** Whether a Host header value (name, or name:port) is allowed: the exact value, or its name without the port. */
  hostAllowed(host: string | undefined): boolean {
    if (!host) return false;
    const h = host.toLowerCase();
    return this.hosts.has(h) || this.hosts.has(h.replace(/:\d+$/, ''));
  }

  /** Whether an Origin header value is allowed; no Origin (a non-browser client) is. */
  originAllowed(origin: string | undefined): boolean {
    if (origin === undefined) return true;
    const o = origin.toLowerCase();
    if (this.origins.has(o)) return true;
    try {
      return this.hostAllowed(new URL(o).host);
    } catch {
      return false;
    }
  }
}
