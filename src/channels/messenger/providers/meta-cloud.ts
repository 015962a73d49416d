import { parseRetryAfter, type OutboundJob, type ProviderAdapter, type SendResult } from '../../../outbound/index.js';
import { classifyMetaError, META_PROVIDER } from './meta-errors.js';

/** What a messenger job carries: the Cloud API message object to post (no credentials: the adapter holds them). */
export interface MessengerJobPayload {
  to: string;
  type: string;
  /** The type's object in the Cloud API's own field names (text, image, interactive, template, ...). */
  content: Record<string, unknown>;
  /** The business phone number id it goes from (absent in jobs made before numbers were kept apart: the config's). */
  from?: string;
}

export interface MetaCloudOptions {
  /** Without a trailing slash: https://graph.facebook.com, or the simulator's address. */
  baseUrl: () => string;
  apiVersion: string;
  /** The config number: jobs without `from`. */
  phoneNumberId: string;
  /** The access token of a business number, read at each send (rotations apply at once); null: the number is gone. */
  accessToken: (phoneNumberId: string) => Promise<string | null>;
  clock?: () => number;
}

interface GraphError {
  error?: { message?: string; type?: string; code?: number | string; error_subcode?: number; fbtrace_id?: string };
}

/**
 * The Cloud API adapter: POST {base}/{version}/{phone-number-id}/messages with the Bearer token; a success answers
 * `messages[0].id` (the wamid), an error a Graph error body classified by the one error table. Never throws for an
 * answer; network errors and timeouts are the pipeline's (retry).
 */
export class MetaCloudAdapter implements ProviderAdapter<MessengerJobPayload> {
  readonly name = META_PROVIDER;
  constructor(private readonly o: MetaCloudOptions) {}

  /** One endpoint (and circuit breaker) per business number. */
  endpointOf(job: OutboundJob<MessengerJobPayload>): string {
    return `${this.o.baseUrl()}/${job.payload.from ?? this.o.phoneNumberId}`;
  }

  /** The request body the Cloud API takes for a job. */
  static body(p: MessengerJobPayload): Record<string, unknown> {
    return { messaging_product: 'whatsapp', recipient_type: 'individual', to: p.to, type: p.type, [p.type]: p.content };
  }

  async send(job: OutboundJob<MessengerJobPayload>, signal: AbortSignal): Promise<SendResult> {
    const from = job.payload.from ?? this.o.phoneNumberId;
    const token = await this.o.accessToken(from);
    if (token === null) return { kind: 'fail', code: 'PROVIDER_AUTH_FAILED', message: `the business number ${from} was removed` };
    const res = await fetch(`${this.o.baseUrl()}/${this.o.apiVersion}/${from}/messages`, {
      method: 'POST',
      signal,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(MetaCloudAdapter.body(job.payload)),
    });
    const text = await res.text();
    const body = parseJson(text);
    const wamid = body?.messages?.[0]?.id;
    if (res.ok && typeof wamid === 'string' && wamid) return { kind: 'sent', providerId: wamid };
    const err = body?.error;
    const retryAfter = parseRetryAfter(res.headers.get('retry-after'), (this.o.clock ?? Date.now)());
    return classifyMetaError(
      {
        providerCode: err?.code ?? null,
        message: err?.message,
        httpStatus: res.ok ? 502 : res.status,
        ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
      },
      job.attempts,
    );
  }
}

type GraphAnswer = GraphError & { messages?: Array<{ id?: string }> };

function parseJson(text: string): GraphAnswer | null {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' ? (v as GraphAnswer) : null;
  } catch {
    return null;
  }
}
