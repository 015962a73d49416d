import type { AccountService } from '../../../accounts/account-service.js';
import type { Db } from '../../../store/types.js';

/** Who answers calls to one of an account's numbers: a voice agent, or the browsers signed in to the dialer as an identity. */
export interface NumberRoute {
  /** International digits without '+', as account numbers are stored. */
  number: string;
  accountId: string;
  agentId: string | null;
  dialerIdentity: string | null;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  number: string;
  account_id: string;
  agent_id: string | null;
  dialer_identity: string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const date = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));
const toRoute = (r: Row): NumberRoute => ({
  number: r.number,
  accountId: r.account_id,
  agentId: r.agent_id,
  dialerIdentity: r.dialer_identity,
  createdAt: date(r.created_at),
  updatedAt: date(r.updated_at),
});

/** Where a number's calls go. */
export type RouteTarget = { agentId: string } | { dialerIdentity: string };
const digitsOf = (number: string): string => number.replace(/^\+/, '');

/** Routes whose agent is still there: a deleted agent's route stays as a row (agents are only marked) but is dead. */
const LIVE = `SELECT r.number, r.account_id, r.agent_id, r.dialer_identity, r.created_at, r.updated_at FROM voice_number_routes r
  LEFT JOIN voice_agents a ON a.id = r.agent_id AND a.account_id = r.account_id AND a.deleted_at IS NULL
  WHERE (r.agent_id IS NULL OR a.id IS NOT NULL)`;

/**
 * Inbound routing in SQL (migrations/0052_voice_inbound.sql): one row per routed number. A route is written only for a
 * number the account owns and a live agent of that account, both checked in the statement that writes it; it goes
 * with the number when the operator takes the number from the account. Every read ignores a route whose agent was
 * deleted, and `resolve`, what an incoming call asks, checks the owner of the number again.
 */
export class NumberRouteStore {
  constructor(private readonly o: { db: Db; accounts: Pick<AccountService, 'ownerOfNumber'> }) {}

  /**
   * Routes calls to `number` to `agentId`, replacing any route it had; null (nothing written) when the number is not
   * the account's or the agent is not a live agent of the account.
   */
  async set(accountId: string, number: string, target: RouteTarget): Promise<NumberRoute | null> {
    const agentId = 'agentId' in target ? target.agentId : null;
    const identity = 'dialerIdentity' in target ? target.dialerIdentity : null;
    const { rows } = await this.o.db.query<Row>(
      `INSERT INTO voice_number_routes (number, account_id, agent_id, dialer_identity)
       SELECT $1::text, $2::text, $3::text, $4::text
       WHERE EXISTS (SELECT 1 FROM account_numbers WHERE number = $1 AND account_id = $2)
         AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM voice_agents WHERE id = $3 AND account_id = $2 AND deleted_at IS NULL))
       ON CONFLICT (number) DO UPDATE SET account_id = EXCLUDED.account_id, agent_id = EXCLUDED.agent_id,
         dialer_identity = EXCLUDED.dialer_identity, updated_at = now()
       RETURNING number, account_id, agent_id, dialer_identity, created_at, updated_at`,
      [digitsOf(number), accountId, agentId, identity],
    );
    return rows.length ? toRoute(rows[0]) : null;
  }

  /** Takes the number's route away (calls to it are no longer answered); false when it had none in this account. */
  async remove(accountId: string, number: string): Promise<boolean> {
    const { rowCount } = await this.o.db.query(`DELETE FROM voice_number_routes WHERE number = $1 AND account_id = $2`, [digitsOf(number), accountId]);
    return rowCount > 0;
  }

  /** The account's live routes, by number. */
  async list(accountId: string): Promise<NumberRoute[]> {
    const { rows } = await this.o.db.query<Row>(`${LIVE} AND r.account_id = $1 ORDER BY r.number`, [accountId]);
    return rows.map(toRoute);
  }

  /** The number's live route in the account, or null. */
  async get(accountId: string, number: string): Promise<NumberRoute | null> {
    const { rows } = await this.o.db.query<Row>(`${LIVE} AND r.number = $1 AND r.account_id = $2`, [digitsOf(number), accountId]);
    return rows.length ? toRoute(rows[0]) : null;
  }

  /**
   * For a call coming in to `number` (digits, with or without '+'): the account and agent that answer it, or null
   * when nothing should (no route, its agent deleted, or the number no longer that account's).
   */
  async resolve(number: string): Promise<({ accountId: string } & RouteTarget) | null> {
    const digits = digitsOf(number);
    const { rows } = await this.o.db.query<Row>(`${LIVE} AND r.number = $1`, [digits]);
    if (!rows.length) return null;
    const { account_id: accountId, agent_id: agentId, dialer_identity: dialerIdentity } = rows[0];
    if ((await this.o.accounts.ownerOfNumber(digits)) !== accountId) return null;
    return agentId !== null ? { accountId, agentId } : { accountId, dialerIdentity: dialerIdentity! };
  }
}
