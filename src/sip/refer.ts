/**
 * Call transfer by REFER (RFC 3515, used as RFC 5589 describes): the transferor asks the other party of a dialog to
 * call a third one; the implicit subscription reports how that call goes, as message/sipfrag NOTIFYs ("SIP/2.0 200
 * OK" once the third party answered). Either side of a call can send or receive one, so both call classes share this.
 */
import type { CallHost, ServerTransaction } from './call-host.js';
import type { Dialog } from './dialog.js';
import type { SipRequest } from './message.js';
import { parseNameAddr } from './name-addr.js';
import { reasonPhrase } from './reasons.js';

/** The transfer's progress as the referred party reports it: the third party's status line. */
export interface ReferProgress {
  status: number;
  reason: string;
  /** The subscription ended with this report (a final status, or the referred party gave up). */
  final: boolean;
}

/** The answer to our REFER: 202 (accepted; the outcome comes as progress), or the refusal (405, 501, 603 …). */
export interface ReferAnswer {
  status: number;
  reason: string;
}

/** Sends REFER in `dialog`; resolves with its final answer (408 when none came, 503 when it could not be sent). */
export function sendRefer(host: CallHost, dialog: Dialog, contact: string, referTo: string, referredBy?: string): Promise<ReferAnswer> {
  const request = dialog.createRequest('REFER');
  request.headers.append('Refer-To', `<${referTo}>`);
  if (referredBy) request.headers.append('Referred-By', referredBy);
  request.headers.append('Contact', contact);
  request.headers.append('Event', 'refer');
  return new Promise((resolve) => {
    host.startClientTransaction(request, dialog.nextHop(), {
      onResponse: (res) => {
        if (res.status >= 200) resolve({ status: res.status, reason: res.reason });
      },
      onTimeout: () => resolve({ status: 408, reason: 'Request Timeout' }),
      onTransportError: () => resolve({ status: 503, reason: 'Service Unavailable' }),
    });
  });
}

/** A NOTIFY of the refer event package, read: null when it is not one (another event, or an unreadable body). */
export function readReferNotify(request: SipRequest): ReferProgress | null {
  const event = (request.headers.get('event') ?? '').split(';')[0].trim().toLowerCase();
  if (event !== 'refer') return null;
  const line = /^SIP\/2\.0 (\d{3})(?: ([^\r\n]*))?/.exec(request.body.trimStart());
  if (!line) return null;
  const status = Number(line[1]);
  const state = (request.headers.get('subscription-state') ?? '').split(';')[0].trim().toLowerCase();
  return { status, reason: line[2] ?? reasonPhrase(status), final: state === 'terminated' || status >= 200 };
}

/**
 * A REFER the far end sent us in a call: `accept()` answers 202 and sends the first NOTIFY (100 Trying), `notify()`
 * each later report, the final one (≥ 200) ending the subscription; `reject()` refuses it. Unanswered, it is
 * refused by the call after the listeners ran.
 */
export class IncomingRefer {
  /** The URI to call, from Refer-To (without its angle brackets and header parameters). */
  readonly referTo: string;
  readonly referredBy: string | undefined;
  private answered = false;
  private ended = false;

  constructor(
    private readonly host: CallHost,
    private readonly dialog: Dialog,
    private readonly request: SipRequest,
    private readonly tx: ServerTransaction,
  ) {
    const header = request.headers.get('refer-to') ?? '';
    let uri = header;
    try {
      uri = parseNameAddr(header).uri;
    } catch {
      // left as written: the caller checks it before dialling anything
    }
    this.referTo = uri.split('?')[0];
    this.referredBy = request.headers.get('referred-by');
  }

  get handled(): boolean {
    return this.answered;
  }

  accept(): void {
    if (this.answered) return;
    this.answered = true;
    this.host.respond(this.tx, this.request, 202);
    this.notify(100, 'Trying');
  }

  reject(status = 603, reason?: string): void {
    if (this.answered) return;
    this.answered = true;
    this.host.respond(this.tx, this.request, status, reason ? { reason } : undefined);
  }

  /** Reports the third party's status; a final one (≥ 200) ends the subscription. */
  notify(status: number, reason = reasonPhrase(status)): void {
    if (!this.answered || this.ended) return;
    const final = status >= 200;
    if (final) this.ended = true;
    const notify = this.dialog.createRequest('NOTIFY');
    notify.headers.append('Event', 'refer');
    notify.headers.append('Subscription-State', final ? 'terminated;reason=noresource' : 'active;expires=60');
    notify.headers.append('Content-Type', 'message/sipfrag;version=2.0');
    notify.body = `SIP/2.0 ${status} ${reason}\r\n`;
    // The transfer's outcome does not hinge on the NOTIFY's own answer.
    this.host.startClientTransaction(notify, this.dialog.nextHop(), { onResponse: () => undefined, onTimeout: () => undefined, onTransportError: () => undefined });
  }
}

/**
 * A REFER in one of our calls: offered to the call's `refer` listeners (`offer` returns whether it had any), and
 * refused when none took it (501 with no listener, 603 when the listeners left it unanswered). Outside an
 * established dialog it is 481.
 */
export function receiveRefer(dialog: Dialog | undefined, host: CallHost, request: SipRequest, tx: ServerTransaction, offer: (refer: IncomingRefer) => boolean): void {
  if (!dialog) return host.respond(tx, request, 481);
  if (!request.headers.get('refer-to')) return host.respond(tx, request, 400, { reason: 'Missing Refer-To' });
  const refer = new IncomingRefer(host, dialog, request, tx);
  const listened = offer(refer);
  if (!refer.handled) refer.reject(listened ? 603 : 501);
}

/** A NOTIFY in one of our calls: answered 200 (489 for an event package we do not know); a refer report is passed on. */
export function receiveNotify(host: CallHost, request: SipRequest, tx: ServerTransaction, report: (progress: ReferProgress) => void): void {
  const progress = readReferNotify(request);
  host.respond(tx, request, progress || !request.headers.get('event') ? 200 : 489);
  if (progress) report(progress);
}
