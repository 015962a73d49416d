/** What the trunk simulator keeps of one call, for tests, the admin API and the CLI. */
import type { G711Codec } from '../../rtp/index.js';
import type { TransportKind } from '../../sip/index.js';

/** ringing until a final answer; the three terminal states are set once the call's media has stopped. */
export type SimCallState = 'ringing' | 'answered' | 'ended' | 'rejected' | 'canceled';

/** The received audio, measured once the call is over. */
export interface SimCallAudio {
  readonly seconds: number;
  /** dBFS; -Infinity for digital silence (null in JSON). */
  rmsDbfs: number;
  /** Share (0–1) of 20 ms frames above the silence threshold. */
  nonSilentShare: number;
  /** 0 for silence or audio too short to tell. */
  dominantFrequencyHz: number;
  /** False once the samples were dropped to keep the simulator's memory bounded (wav() is then empty). */
  kept: boolean;
}

export interface SimVoiceCall {
  /** The simulator's id (admin API, controls). */
  readonly id: string;
  /** The SIP Call-ID. */
  readonly callId: string;
  /** The caller: the From URI's user part (its whole URI when it has none). */
  readonly from: string;
  /** The called number: the Request-URI's user part. */
  readonly to: string;
  readonly transport: TransportKind;
  /** What the number plan made of `to` (e.g. 'answer', 'reject 486', 'answer, then hangup'). */
  readonly behaviour: string;
  readonly startedAt: number;
  readonly state: SimCallState;
  /** The answer's codec, once media is set up. */
  readonly codec: G711Codec | null;
  /** The final status the trunk sent the INVITE (200, 486, 487 …), null while ringing. */
  readonly status: number | null;
  readonly answeredAt: number | null;
  readonly endedAt: number | null;
  readonly endedBy: 'caller' | 'trunk' | null;
  /** DTMF the caller sent the trunk, in order. */
  readonly digitsReceived: string;
  /** DTMF the trunk sent the caller. */
  readonly digitsSent: string;
  readonly audio: SimCallAudio | null;
  /** The number (or URI) a REFER asked the trunk to transfer the call to, and that transfer's final status. */
  readonly transfer: { to: string; status: number | null } | null;
  /** The received audio as a 16-bit 8 kHz mono WAV (empty data when nothing was recorded or kept). */
  wav(): Buffer;
}
