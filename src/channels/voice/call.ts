import type { CallStep } from './call-script.js';
import type { CallStatus } from './call-status.js';

/** A call as stored (voice_calls) and as the API shows it. */
export interface Call {
  id: string;
  accountId: string;
  to: string;
  from: string;
  status: CallStatus;
  steps: CallStep[];
  statusCallback: string | null;
  statusCallbackEvents: string[];
  ringTimeoutSeconds: number;
  timeLimitSeconds: number;
  machineDetection: 'off' | 'detect';
  reference: string | null;
  owner: string | null;
  hangupRequested: boolean;
  trunk: string | null;
  trunksTried: string[];
  sipCallId: string | null;
  sipCode: number | null;
  sipReason: string | null;
  errorCode: string | null;
  errorReason: string | null;
  digits: string;
  answeredBy: string | null;
  pricePerMinuteMicros: number;
  heldSeconds: number;
  billableSeconds: number | null;
  costMicros: number | null;
  createdAt: Date;
  initiatedAt: Date | null;
  ringingAt: Date | null;
  answeredAt: Date | null;
  endedAt: Date | null;
  /** The agent version the call talks with, and the call's variables (null: a scripted call). */
  agent: { id: string; version: number; variables: Record<string, string> } | null;
  /** Placed by Ferry (the API, the dialer) or answered by it (a call to one of the account's numbers). */
  direction: CallDirection;
}

export type CallDirection = 'outbound' | 'inbound';

/** A status change as the owner records it: the new status and what it learnt with it. */
export interface CallChange {
  status: CallStatus;
  /** Why (kept in the history row's detail): the SIP response, our CANCEL, the owner's crash. */
  detail?: Record<string, unknown>;
  trunk?: string;
  trunksTried?: string[];
  sipCallId?: string;
  sipCode?: number | null;
  sipReason?: string | null;
  errorCode?: string | null;
  errorReason?: string | null;
  digits?: string;
  answeredBy?: string | null;
  billableSeconds?: number;
  costMicros?: number;
  /** When it ended, if not now (an orphaned call ends at its owner's last renewal). */
  endedAt?: Date;
}
