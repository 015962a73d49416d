import type { MenuTree } from '../../../src/channels/ussd/menu-tree.js';
import type { UssdService } from '../../../src/channels/ussd/index.js';
import type { ReceivedMessage } from '../../../src/sim/smpp/simulator.js';
import { accountWithKey, call, type TestDaemon, simulatorOf } from '../../helpers/daemon.js';

export const BANK_TREE: MenuTree = {
  start: 'main',
  nodes: {
    main: { type: 'menu', text: 'Ferry Bank', options: [{ key: '1', label: 'Balance', next: 'bal' }, { key: '2', label: 'Send money', next: 'amount' }, { key: '3', label: 'Help', next: 'help' }] },
    bal: { type: 'end', text: 'Your balance is 120.50 GHS' },
    amount: { type: 'input', text: 'Enter amount', pattern: '[0-9]{1,5}', error: 'Digits only', var: 'amount', next: 'sent' },
    sent: { type: 'end', text: 'You sent {amount} GHS' },
    help: { type: 'end', text: 'Call 100 for help' },
  },
};

export function ussdOf(d: TestDaemon): UssdService {
  return (d.daemon as unknown as { modules: { service<T>(n: string): T } }).modules.service<UssdService>('ussd');
}

export async function customer(d: TestDaemon, name: string) {
  const { token, account } = await accountWithKey(d, name);
  const api = (method: string, path: string, body?: unknown) => call(d.api, method, path, { token, body });
  return { token, accountId: account.id as string, api };
}

/** A menu created and published; returns its id. */
export async function publishedMenu(api: Awaited<ReturnType<typeof customer>>['api'], tree: MenuTree, name = 'menu'): Promise<string> {
  const m = await api('POST', '/v1/ussd/menus', { name, tree });
  if (m.status !== 200) throw new Error(m.text);
  const p = await api('POST', `/v1/ussd/menus/${m.json.data.id}/publish`, {});
  if (p.status !== 200) throw new Error(p.text);
  return m.json.data.id as string;
}

/** An Africa's Talking callback over real HTTP (form POST); the text/plain answer. */
export async function atHop(d: TestDaemon, path: string, fields: Record<string, string>): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(d.api + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** USSD submits the SMSC simulator received for a phone, waiting for at least n. */
export async function ussdTo(d: TestDaemon, phone: string, n = 1): Promise<ReceivedMessage[]> {
  const sim = simulatorOf(d.daemon)!.simulator;
  const until = Date.now() + 10_000;
  for (;;) {
    const found = sim.received().filter((m) => m.destinations[0] === phone && m.tlvs?.ussd_service_op !== undefined);
    if (found.length >= n) return found;
    if (Date.now() > until) throw new Error(`${found.length} USSD screens to ${phone}, expected ${n}`);
    await sleep(10);
  }
}

let seq = 0;
/** A phone number unique to this process and call. */
export function newPhone(): string {
  return `23324${String((process.pid % 1000) * 1000 + ++seq).padStart(7, '0')}`;
}

export async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (done(v) || Date.now() > end) return v;
    await sleep(20);
  }
}
