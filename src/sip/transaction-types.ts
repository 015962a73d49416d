import type { SipMessage, SipResponse } from './message.js';

/** Hands a message to the transport for the transaction's peer; rejects on a transport error. */
export type SendFn = (message: SipMessage) => Promise<void>;

/** What a client transaction reports to its user (the UA core). */
export interface ClientTransactionUser {
  onResponse(response: SipResponse): void;
  /** Timer B / F fired with no final response. */
  onTimeout(): void;
  onTransportError(error: Error): void;
}

export type TransactionState = 'calling' | 'trying' | 'proceeding' | 'accepted' | 'completed' | 'confirmed' | 'terminated';
