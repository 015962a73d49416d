import { newId } from '../../src/util/ids.js';
import type { NewMessage } from '../../src/ledger/types.js';

/** A plausible accepted SMS row for ledger tests; override what the test cares about. */
export function sampleMessage(over: Partial<NewMessage> = {}): NewMessage {
  return {
    id: newId('msg_'),
    accountId: 'acc_1',
    ingress: 'smpp',
    source: 'Ferry',
    sourceTon: 5,
    destination: '447700900123',
    body: 'Your code is 482913',
    segments: 1,
    encoding: 'gsm7',
    priority: 0,
    registeredDelivery: 1,
    costMicros: 35_000,
    currency: 'EUR',
    customerSystemId: 'esme1',
    ...over,
  };
}
