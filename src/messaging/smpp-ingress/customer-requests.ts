import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { AcceptedSms, SmsIngress, SmsSubmission } from '../types.js';
import { CommandStatus, statusName } from '../../smpp/constants.js';
import type { Pdu, PduOf, UnsuccessSme } from '../../smpp/pdu.js';
import type { ResponseFields, Session } from '../../smpp/session.js';
import { formatSmppAbsolute } from '../../smpp/time.js';
import type { BindRegistry, CustomerBind } from '../../smpp/customer/bind-registry.js';
import type { CustomerMetrics } from '../../smpp/customer/customer-metrics.js';
import { messageStateOf } from './message-state.js';
import { ledgerMessageId, smppMessageId } from './smpp-message-id.js';
import { isSubmitRefusal, statusOfSmsError, submissionFromPdu, type SubmitFields, type SubmitRefusal } from './submit-sm.js';

export interface CustomerRequestsOptions {
  sms: SmsIngress;
  binds: BindRegistry;
  log: Logger;
  metrics?: CustomerMetrics;
  /** Clock for relative times (default Date.now). */
  now?: () => number;
}

/** Refusals about one destination: in submit_multi they go to the unsuccess list instead of failing the PDU. */
const DESTINATION_STATUSES = new Set<number>([CommandStatus.ESME_RINVDSTADR, CommandStatus.ESME_RINVDSTTON, CommandStatus.ESME_RINVDSTNPI]);
const MAX_MULTI_DESTS = 254;

/**
 * Answers what a bound customer sends besides binds and keep-alives:
 * - submit_sm, data_sm: validated (submit-sm.ts), handed to the SMS service, answered with the Ferry message id once
 *   durably accepted, in its SMPP form (smpp-message-id.ts: the REST id without `msg_`)
 * - submit_multi: each SME destination is its own message; the response carries the first accepted id and the
 *   refused destinations in unsuccess_sme; distribution lists are refused (ESME_RINVDLNAME). When no destination
 *   is accepted the PDU fails with their common status, or ESME_RSUBMITFAIL when they differ
 * - query_sm: by the SMPP or the REST form of the id; unknown id (or another account's) → ESME_RQUERYFAIL; empty id →
 *   ESME_RINVMSGID
 * - cancel_sm: by message_id only (either form); unknown, already sent or final → ESME_RCANCELFAIL
 * - replace_sm: not supported → ESME_RREPLACEFAIL
 */
export class CustomerRequests {
  private readonly sms: SmsIngress;
  private readonly binds: BindRegistry;
  private readonly log: Logger;
  private readonly metrics: CustomerMetrics | undefined;
  private readonly now: () => number;

  constructor(options: CustomerRequestsOptions) {
    this.sms = options.sms;
    this.binds = options.binds;
    this.log = options.log;
    this.metrics = options.metrics;
    this.now = options.now ?? Date.now;
  }

  /** The Session request handler. */
  readonly handle = (pdu: Pdu, session: Session): Promise<ResponseFields> => {
    const bind = this.binds.bindOf(session);
    if (!bind) return Promise.resolve({ command_status: CommandStatus.ESME_RINVBNDSTS });
    switch (pdu.command) {
      case 'submit_sm':
      case 'data_sm':
        return this.timed(() => this.submitOne(pdu, bind));
      case 'submit_multi':
        return this.timed(() => this.submitMulti(pdu, bind));
      case 'query_sm':
        return this.query(pdu, bind);
      case 'cancel_sm':
        return this.cancel(pdu, bind);
      case 'replace_sm':
        return Promise.resolve({ command_status: CommandStatus.ESME_RREPLACEFAIL });
      default:
        return Promise.resolve({ command_status: CommandStatus.ESME_RINVCMDID });
    }
  };

  private async timed(run: () => Promise<ResponseFields>): Promise<ResponseFields> {
    const started = performance.now();
    try {
      return await run();
    } finally {
      this.metrics?.answered((performance.now() - started) / 1000);
    }
  }

  private async submitOne(pdu: SubmitFields, bind: CustomerBind): Promise<ResponseFields> {
    const sub = submissionFromPdu(pdu, { accountId: bind.accountId, systemId: bind.systemId, now: this.now() });
    const outcome = isSubmitRefusal(sub) ? this.refused(bind, sub) : await this.submit(sub, bind);
    this.metrics?.submitted(outcome.status);
    return outcome.status === CommandStatus.ESME_ROK ? { message_id: smppMessageId(outcome.accepted!.messageId) } : { command_status: outcome.status };
  }

  private async submitMulti(pdu: PduOf<'submit_multi'>, bind: CustomerBind): Promise<ResponseFields> {
    const dests = pdu.dest_address;
    if (dests.length === 0 || dests.length > MAX_MULTI_DESTS) return { command_status: CommandStatus.ESME_RINVNUMDESTS };
    const now = this.now();
    const unsuccess: UnsuccessSme[] = [];
    const pending: Array<{ ton: number; npi: number; addr: string; sub: SmsSubmission }> = [];
    for (const d of dests) {
      if (d.dest_flag === 2) {
        unsuccess.push({ dest_addr_ton: 0, dest_addr_npi: 0, destination_addr: d.dl_name, error_status_code: CommandStatus.ESME_RINVDLNAME });
        continue;
      }
      const sub = submissionFromPdu({ ...pdu, dest_addr_ton: d.dest_addr_ton, dest_addr_npi: d.dest_addr_npi, destination_addr: d.destination_addr }, { accountId: bind.accountId, systemId: bind.systemId, now });
      if (!isSubmitRefusal(sub)) {
        pending.push({ ton: d.dest_addr_ton, npi: d.dest_addr_npi, addr: d.destination_addr, sub });
        continue;
      }
      // Anything but the destination is common to every destination: the whole PDU is wrong.
      if (!DESTINATION_STATUSES.has(sub.status)) {
        this.refused(bind, sub);
        this.metrics?.submitted(sub.status);
        return { command_status: sub.status };
      }
      this.refused(bind, sub);
      unsuccess.push({ dest_addr_ton: d.dest_addr_ton, dest_addr_npi: d.dest_addr_npi, destination_addr: d.destination_addr, error_status_code: sub.status });
    }
    const outcomes = await Promise.all(pending.map((p) => this.submit(p.sub, bind)));
    let messageId: string | undefined;
    outcomes.forEach((o, i) => {
      if (o.accepted) messageId ??= o.accepted.messageId;
      else unsuccess.push({ dest_addr_ton: pending[i].ton, dest_addr_npi: pending[i].npi, destination_addr: pending[i].addr, error_status_code: o.status });
    });
    for (const u of unsuccess) this.metrics?.submitted(u.error_status_code);
    for (const o of outcomes) if (o.accepted) this.metrics?.submitted(CommandStatus.ESME_ROK);
    if (messageId !== undefined) return { message_id: smppMessageId(messageId), unsuccess_sme: unsuccess };
    const statuses = new Set(unsuccess.map((u) => u.error_status_code));
    return { command_status: statuses.size === 1 ? [...statuses][0] : CommandStatus.ESME_RSUBMITFAIL };
  }

  private refused(bind: CustomerBind, refusal: SubmitRefusal): { status: number; accepted?: undefined } {
    this.log.debug({ systemId: bind.systemId, status: statusName(refusal.status), reason: refusal.reason }, 'customer submit refused');
    return { status: refusal.status };
  }

  /** Hands one submission to the SMS service; resolves after the durable commit or with the refusal status. */
  private async submit(sub: SmsSubmission, bind: CustomerBind): Promise<{ status: number; accepted?: AcceptedSms }> {
    try {
      return { status: CommandStatus.ESME_ROK, accepted: await this.sms.submit(sub) };
    } catch (err) {
      return { status: this.statusOf(err, bind, 'submit') };
    }
  }

  private async query(pdu: PduOf<'query_sm'>, bind: CustomerBind): Promise<ResponseFields> {
    if (!pdu.message_id) return { command_status: CommandStatus.ESME_RINVMSGID };
    const id = ledgerMessageId(pdu.message_id);
    if (!id) return { command_status: CommandStatus.ESME_RQUERYFAIL };
    let record;
    try {
      record = await this.sms.find(id, bind.accountId);
    } catch (err) {
      return { command_status: this.statusOf(err, bind, 'query_sm') };
    }
    if (!record) return { command_status: CommandStatus.ESME_RQUERYFAIL };
    return {
      message_id: smppMessageId(record.id),
      final_date: record.finalAt !== null ? formatSmppAbsolute(new Date(record.finalAt)) : '',
      message_state: messageStateOf(record.status, bind.interfaceVersion),
      error_code: 0,
    };
  }

  private async cancel(pdu: PduOf<'cancel_sm'>, bind: CustomerBind): Promise<ResponseFields> {
    // Cancelling by service_type + addresses (no message_id) is not supported.
    const id = pdu.message_id ? ledgerMessageId(pdu.message_id) : null;
    if (!id) return { command_status: CommandStatus.ESME_RCANCELFAIL };
    try {
      const cancelled = await this.sms.cancel(id, bind.accountId);
      return cancelled ? {} : { command_status: CommandStatus.ESME_RCANCELFAIL };
    } catch (err) {
      return { command_status: this.statusOf(err, bind, 'cancel_sm') };
    }
  }

  private statusOf(err: unknown, bind: CustomerBind, operation: string): number {
    const status = statusOfSmsError(err);
    if (status !== undefined) {
      this.log.debug({ systemId: bind.systemId, operation, status: statusName(status), code: (err as { code?: string }).code }, 'customer request refused by the SMS service');
      return status;
    }
    this.log.error({ err, systemId: bind.systemId, operation }, 'customer request failed');
    return CommandStatus.ESME_RSYSERR;
  }
}
