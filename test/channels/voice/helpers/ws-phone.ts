import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { buildResponse, parseMessage, serializeMessage, type SipMessage, type SipRequest } from '../../../../src/sip/index.js';
import { until } from '../../../helpers/wait.js';

/**
 * A browser stand-in on the dialer's SIP WebSocket, speaking SIP by hand (no WebRTC). On an INVITE it either declines
 * at once (486), or rings (180) until the call is cancelled, which it answers as a phone does (200 to the CANCEL, 487
 * to the INVITE).
 */
export async function wsPhone(t: { teardown(fn: () => unknown): void }, api: string, token: string, o: { onInvite: 'decline' | 'ring' } = { onInvite: 'decline' }) {
  const ws = new WebSocket(`${api.replace(/^http/, 'ws')}/v1/voice/dialer/sip?token=${encodeURIComponent(token)}`, 'sip');
  t.teardown(() => ws.terminate());
  const received: SipMessage[] = [];
  const invites: SipRequest[] = [];
  const cancels: SipRequest[] = [];
  const send = (m: SipMessage) => ws.send(serializeMessage(m).toString('utf8'));
  const toTag = randomBytes(4).toString('hex');
  ws.on('message', (data: Buffer) => {
    const m = parseMessage(data);
    received.push(m);
    if (m.kind !== 'request') return;
    if (m.method === 'INVITE') {
      invites.push(m);
      send(buildResponse(m, o.onInvite === 'decline' ? 486 : 180, { toTag }));
    } else if (m.method === 'CANCEL') {
      cancels.push(m);
      send(buildResponse(m, 200));
      const invite = invites.find((i) => i.headers.get('call-id') === m.headers.get('call-id'));
      if (invite) send(buildResponse(invite, 487, { toTag }));
    }
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let cseq = 0;
  const callId = `${randomBytes(6).toString('hex')}@phone.invalid`;
  return {
    invites,
    cancels,
    /** REGISTER with this lifetime (0: unregister); resolves with the registrar's status. */
    async register(expires: number): Promise<number> {
      const seq = ++cseq;
      ws.send(
        [
          'REGISTER sip:127.0.0.1 SIP/2.0',
          `Via: SIP/2.0/WS phone.invalid;branch=z9hG4bK${randomBytes(6).toString('hex')}`,
          'Max-Forwards: 70',
          'From: <sip:alice@127.0.0.1>;tag=phone1',
          'To: <sip:alice@127.0.0.1>',
          `Call-ID: ${callId}`,
          `CSeq: ${seq} REGISTER`,
          `Contact: <sip:alice@phone.invalid;transport=ws>;expires=${expires}`,
          `Expires: ${expires}`,
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n'),
      );
      const answer = await until(async () => received.find((m) => m.kind === 'response' && m.headers.get('cseq') === `${seq} REGISTER`), (m) => m !== undefined, 10_000);
      return answer!.kind === 'response' ? answer!.status : 0;
    },
    /** The connection drops without an unregister (a closed tab, a lost network). */
    drop: () => ws.terminate(),
  };
}
