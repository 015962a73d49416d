import type { TestDaemon } from '../../helpers/daemon.js';

/** Two business numbers of two accounts, their credentials, and what the numbers tests look at. */
export const A = { phoneNumberId: '300000000000001', wabaId: '310000000000001', accessToken: 'EAAG-token-of-number-A-0123456789', appSecret: 'app-secret-of-number-A-0123456789' };
export const B = { phoneNumberId: '300000000000002', wabaId: '310000000000002', accessToken: 'EAAG-token-of-number-B-0123456789', appSecret: 'app-secret-of-number-B-0123456789' };
export const SECRETS = [A.accessToken, A.appSecret, B.accessToken, B.appSecret, 'rotated-token-of-A-0123456789'];

export const inboundBody = (phoneNumberId: string, waba: string, from: string, wamid: string) =>
  JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: waba,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550009999', phone_number_id: phoneNumberId },
              contacts: [{ profile: { name: 'Ama' }, wa_id: from }],
              messages: [{ from, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: 'hi' } }],
            },
          },
        ],
      },
    ],
  });

export async function eventsOf(d: TestDaemon, type: string, key: string): Promise<string[]> {
  const { rows } = await d.daemon.db.query<{ account_id: string }>(`SELECT account_id FROM webhook_events WHERE type = $1 AND message_key = $2 ORDER BY account_id`, [type, key]);
  return rows.map((r) => r.account_id);
}
