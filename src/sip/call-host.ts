import type { Dialog } from './dialog.js';
import type { SipRequest, SipResponse } from './message.js';
import type { ServerInviteTransaction } from './server-invite-transaction.js';
import type { ServerNonInviteTransaction } from './server-non-invite-transaction.js';
import type { SipTimerConfig } from './timers.js';
import type { ClientTransactionUser } from './transaction-types.js';
import type { SipTarget, TransportKind } from './transport.js';

/** A server transaction a dialog user answers through. */
export type ServerTransaction = ServerInviteTransaction | ServerNonInviteTransaction;

/** What a call (UAC or UAS side) receives from the UA core for its dialog. */
export interface DialogUser {
  onRequest(request: SipRequest, tx: ServerTransaction): void;
  onAck(request: SipRequest): void;
  /** Our 2xx to an INVITE got no ACK within 64*T1. */
  onAckTimeout?(): void;
  /** Its WebSocket connection closed: nothing can be sent any more, so end at once (no BYE, no CANCEL). */
  transportLost?(): void;
  /** UA shutdown: stop at once; returns the BYE to send best-effort when the call was answered. */
  abandon(): { request: SipRequest; target: SipTarget } | undefined;
}

/** The UA core services the call objects use (implemented by UserAgent). */
export interface CallHost {
  readonly timers: SipTimerConfig;
  readonly userAgent: string;
  contact(transport: TransportKind): string;
  /** Starts a client transaction; adds a Via with a new branch unless the request already has one (CANCEL). */
  startClientTransaction(request: SipRequest, target: SipTarget, user: ClientTransactionUser): void;
  /** Sends a request outside any transaction (the ACK for a 2xx, a BYE during shutdown): adds a Via. */
  sendStateless(request: SipRequest, target: SipTarget): void;
  respond(tx: ServerTransaction, request: SipRequest, status: number, extra?: { reason?: string; toTag?: string; body?: string; headers?: ReadonlyArray<[string, string]> }): void;
  addDialog(callId: string, localTag: string, user: DialogUser): void;
  removeDialog(callId: string, localTag: string): void;
}

export type { Dialog, SipResponse };
