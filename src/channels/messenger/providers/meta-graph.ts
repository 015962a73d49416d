/** The Graph API calls besides sending: number checks, templates, the number's quality. */
export interface MetaGraphOptions {
  baseUrl: () => string;
  apiVersion: string;
  timeoutMs?: number;
}

/** Whose call it is: a business number, its WABA and its token. */
export interface GraphNumber {
  phoneNumberId: string;
  wabaId: string;
  accessToken: string;
}

/** The provider refused or failed a Graph call; `code` is its error code, kept verbatim. */
export class GraphError extends Error {
  constructor(
    message: string,
    readonly httpStatus: number,
    readonly code: string | null,
  ) {
    super(message);
  }
}

export class MetaGraphClient {
  constructor(private readonly o: MetaGraphOptions) {}

  private async call<T>(n: GraphNumber, method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.o.baseUrl()}/${this.o.apiVersion}/${path}`, {
      method,
      signal: AbortSignal.timeout(this.o.timeoutMs ?? 15_000),
      headers: { authorization: `Bearer ${n.accessToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    if (!res.ok) throw new GraphError(json?.error?.message ?? `HTTP ${res.status}`, res.status, json?.error?.code !== undefined ? String(json.error.code) : null);
    return json as T;
  }

  /** phone → on_platform / not_on_platform, for the numbers the provider answered about. */
  async checkContacts(n: GraphNumber, phones: readonly string[]): Promise<Map<string, 'on_platform' | 'not_on_platform'>> {
    const r = await this.call<{ contacts?: Array<{ input?: string; status?: string }> }>(n, 'POST', `${n.phoneNumberId}/contacts`, { blocking: 'wait', contacts: phones });
    const out = new Map<string, 'on_platform' | 'not_on_platform'>();
    for (const c of r.contacts ?? []) {
      if (typeof c.input !== 'string') continue;
      if (c.status === 'valid') out.set(c.input, 'on_platform');
      else if (c.status === 'invalid') out.set(c.input, 'not_on_platform');
    }
    return out;
  }

  async createTemplate(n: GraphNumber, t: { name: string; language: string; category: string; components: unknown[] }): Promise<{ id: string; status: string }> {
    return this.call(n, 'POST', `${n.wabaId}/message_templates`, t);
  }

  async deleteTemplate(n: GraphNumber, name: string): Promise<void> {
    await this.call(n, 'DELETE', `${n.wabaId}/message_templates?name=${encodeURIComponent(name)}`);
  }

  async quality(n: GraphNumber): Promise<{ rating: string; tier: string | null }> {
    const r = await this.call<{ quality_rating?: string; messaging_limit_tier?: string }>(n, 'GET', `${n.phoneNumberId}?fields=quality_rating,messaging_limit_tier`);
    return { rating: r.quality_rating ?? 'UNKNOWN', tier: r.messaging_limit_tier ?? null };
  }
}
