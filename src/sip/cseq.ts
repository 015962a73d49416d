import { SipParseError } from './errors.js';

export interface CSeq {
  seq: number;
  method: string;
}

/** RFC 3261 8.1.1.5: the number is below 2**31. */
export const MAX_CSEQ = 2 ** 31 - 1;

export function parseCSeq(text: string): CSeq {
  const m = /^\s*(\d{1,10})\s+([A-Za-z0-9\-.!%*_+`'~]+)\s*$/.exec(text);
  if (!m) throw new SipParseError('bad CSeq');
  const seq = Number(m[1]);
  if (seq > MAX_CSEQ) throw new SipParseError('CSeq number out of range');
  return { seq, method: m[2] };
}
