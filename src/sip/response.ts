import { SipHeaders } from './headers.js';
import type { SipRequest, SipResponse } from './message.js';
import { reasonPhrase } from './reasons.js';

export interface ResponseOptions {
  reason?: string;
  /** Added to To when the request's To has no tag yet. */
  toTag?: string;
  headers?: Iterable<readonly [string, string]>;
  body?: string;
  contentType?: string;
}

/** RFC 3261 8.2.6.2: a response copying Via, From, To, Call-ID and CSeq from the request. */
export function buildResponse(request: SipRequest, status: number, options: ResponseOptions = {}): SipResponse {
  const headers = new SipHeaders();
  for (const v of request.headers.getAll('via')) headers.append('Via', v);
  headers.append('From', request.headers.get('from') ?? '');
  let to = request.headers.get('to') ?? '';
  if (options.toTag !== undefined && status !== 100 && !/;\s*tag=/i.test(to)) to += `;tag=${options.toTag}`;
  headers.append('To', to);
  headers.append('Call-ID', request.headers.get('call-id') ?? '');
  headers.append('CSeq', request.headers.get('cseq') ?? '');
  if (options.headers) for (const [n, v] of options.headers) headers.append(n, v);
  const body = options.body ?? '';
  if (body !== '') headers.append('Content-Type', options.contentType ?? 'application/sdp');
  return { kind: 'response', status, reason: options.reason ?? reasonPhrase(status), headers, body };
}
