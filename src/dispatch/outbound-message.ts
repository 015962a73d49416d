import type { MessageRecord } from '../ledger/types.js';
import { EsmClass } from '../smpp/constants.js';
import { formatSmppAbsolute } from '../smpp/time.js';
import { concatUdh16, concatUdh8 } from '../smpp/text/udh.js';
import type { OutboundMessage } from '../smpp/upstream/outbound.js';

/**
 * The upstream submit for a ledger row. Text is handed over as text (each upstream encodes and splits it its own
 * way); a customer's own part keeps its octets and coding, and its concatenation goes upstream as a UDH whether
 * the customer used a UDH or SAR TLVs. Ferry always asks upstreams for a receipt: it is how the ledger learns the
 * final state, whatever the customer asked for.
 */
export function outboundOf(rec: MessageRecord, attempt: number, partsDone?: readonly number[], open?: (sealed: string) => string): OutboundMessage {
  const msg: OutboundMessage = {
    id: rec.id,
    accountId: rec.accountId,
    source: rec.source,
    sourceTon: rec.sourceTon,
    sourceNpi: rec.sourceNpi,
    destination: rec.destination,
    registeredDelivery: 1,
    priority: rec.priority,
    attempt,
  };
  if (rec.expiresAt !== null) msg.validityPeriod = formatSmppAbsolute(new Date(rec.expiresAt));
  if (partsDone?.length) msg.partsDone = partsDone;
  if (rec.bodySealed !== null && open) {
    msg.text = open(rec.bodySealed);
    return msg;
  }
  if (rec.bodyBytes === null) {
    msg.text = rec.body ?? '';
    return msg;
  }
  msg.dataCoding = rec.dataCoding ?? 0;
  const bytes = rec.bodyBytes;
  if (rec.esmClass & EsmClass.UDHI && bytes.length > 0 && bytes[0] + 1 <= bytes.length) {
    msg.udh = bytes.subarray(0, bytes[0] + 1);
    msg.bytes = bytes.subarray(bytes[0] + 1);
  } else if (rec.udhRef !== null && rec.udhTotal !== null && rec.udhSeq !== null) {
    msg.udh = rec.udhRef > 0xff ? concatUdh16(rec.udhRef, rec.udhTotal, rec.udhSeq) : concatUdh8(rec.udhRef, rec.udhTotal, rec.udhSeq);
    msg.bytes = bytes;
  } else {
    msg.bytes = bytes;
  }
  return msg;
}
