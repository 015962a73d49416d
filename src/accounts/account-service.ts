import { NUMBER_VALIDATIONS, type NumberValidation } from '../numbers/number-validation.js';
import { ApiError, invalidField } from '../http/errors.js';
import { hashPassword, verifyPassword } from '../security/secrets.js';
import type { Db } from '../store/types.js';
import { newId, randomFrom } from '../util/ids.js';
import { AmountError, checkPlaces, formatMicros, fromMicros, MAX_MICROS, parseAmount, type ParsedAmount } from './money.js';

export interface Account {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  suspendedReason: string | null;
  balance: number;
  /** How far below zero debits may take the balance (an overdraft, in the account currency); 0: none. */
  creditLimit: number;
  currency: string;
  defaultCountry: string | null;
  /** Submits per second over SMPP and REST together; null: the server default. */
  maxTps: number | null;
  /** Recipients the account may send to (numbers, or prefixes ending in *); null: anyone. */
  allowedRecipients: string[] | null;
  /** How strictly recipients are checked (strict, possible, off); null: the route rule's, else the ingress default. */
  numberValidation: NumberValidation | null;
  createdAt: string;
  updatedAt: string;
}

export interface SmppCredentials {
  systemId: string;
  accountId: string;
  allowedIps: string[] | null;
  maxBinds: number;
}

interface AccountRow {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  suspended_reason: string | null;
  balance_micros: number;
  credit_limit_micros: number;
  currency: string;
  default_country: string | null;
  max_tps: number | null;
  allowed_recipients: string[] | null;
  number_validation: NumberValidation | null;
  created_at: Date;
  updated_at: Date;
}

const ACCOUNT_COLUMNS = 'id, name, status, suspended_reason, balance_micros, credit_limit_micros, currency, default_country, max_tps, allowed_recipients, number_validation, created_at, updated_at';
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const SYSTEM_ID = /^[A-Za-z0-9_.-]{1,15}$/;
const PASSWORD_ALPHABET = 'abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789';

function toAccount(r: AccountRow): Account {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    suspendedReason: r.suspended_reason,
    balance: fromMicros(r.balance_micros),
    creditLimit: fromMicros(r.credit_limit_micros),
    currency: r.currency,
    defaultCountry: r.default_country,
    maxTps: r.max_tps,
    allowedRecipients: r.allowed_recipients,
    numberValidation: r.number_validation,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}

/** Accounts, their balance and their SMPP credentials. */
export class AccountService {
  /** Called after any change that could alter an authentication outcome (suspend, resume). */
  onChange: (accountId: string) => void = () => {};

  constructor(private readonly db: Db) {}

  async create(input: {
    name: string;
    currency?: string;
    defaultCountry?: string | null;
    smppPassword?: string | null;
    smppSystemId?: string | null;
  }): Promise<{ account: Account; smpp: { systemId: string; password: string } }> {
    if (!NAME.test(input.name)) {
      throw invalidField('name', 'letters, digits, _ . - ; at most 64 characters');
    }
    const currency = (input.currency ?? 'USD').toUpperCase();
    if (!/^[A-Z]{3}$/.test(currency)) throw invalidField('currency', 'ISO 4217 code');
    const country = input.defaultCountry ? input.defaultCountry.toUpperCase() : null;
    if (country && !/^[A-Z]{2}$/.test(country)) throw invalidField('defaultCountry', 'ISO 3166 alpha-2 code');
    const password = input.smppPassword ?? randomFrom(PASSWORD_ALPHABET, 8);
    validateSmppPassword(password);
    const systemId = input.smppSystemId ?? input.name.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 15);
    if (!SYSTEM_ID.test(systemId)) throw invalidField('smppSystemId', 'at most 15 characters: letters, digits, _ . -');
    const passwordHash = await hashPassword(password);
    const id = newId('acc_');
    try {
      const row = await this.db.tx(async (q) => {
        const { rows } = await q.query<AccountRow>(
          `INSERT INTO accounts (id, name, currency, default_country) VALUES ($1, $2, $3, $4) RETURNING ${ACCOUNT_COLUMNS}`,
          [id, input.name, currency, country],
        );
        await q.query(`INSERT INTO smpp_credentials (system_id, account_id, password_hash) VALUES ($1, $2, $3)`, [systemId, id, passwordHash]);
        return rows[0];
      });
      return { account: toAccount(row), smpp: { systemId, password } };
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        const detail = String((err as { detail?: string; message?: string }).detail ?? (err as Error).message);
        if (detail.includes('system_id')) throw new ApiError('CONFLICT', { message: `SMPP system_id ${systemId} is taken; choose another with smppSystemId` });
        throw new ApiError('ACCOUNT_EXISTS');
      }
      throw err;
    }
  }

  async list(): Promise<Account[]> {
    const { rows } = await this.db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, id`);
    return rows.map(toAccount);
  }

  /** By id or by name. */
  async find(ref: string): Promise<Account | null> {
    const { rows } = await this.db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1 OR name = $1`, [ref]);
    return rows[0] ? toAccount(rows[0]) : null;
  }

  async get(ref: string): Promise<Account> {
    const a = await this.find(ref);
    if (!a) throw new ApiError('ACCOUNT_NOT_FOUND');
    return a;
  }

  async setStatus(ref: string, status: 'active' | 'suspended', reason: string | null = null): Promise<Account> {
    const { rows } = await this.db.query<AccountRow>(
      `UPDATE accounts SET status = $2, suspended_reason = $3, updated_at = now() WHERE id = $1 OR name = $1 RETURNING ${ACCOUNT_COLUMNS}`,
      [ref, status, status === 'suspended' ? reason : null],
    );
    if (!rows[0]) throw new ApiError('ACCOUNT_NOT_FOUND');
    this.onChange(rows[0].id);
    return toAccount(rows[0]);
  }

  /** Changes limits and defaults; fields left undefined stay as they are (null clears). */
  async update(
    ref: string,
    patch: {
      maxTps?: number | null;
      defaultCountry?: string | null;
      allowedRecipients?: string[] | null;
      creditLimit?: number | string;
      numberValidation?: NumberValidation | null;
    },
  ): Promise<Account> {
    for (const r of patch.allowedRecipients ?? []) {
      if (!/^\+?[0-9]{1,15}\*?$/.test(r)) throw invalidField('allowedRecipients', 'numbers, or prefixes ending in *');
    }
    if (patch.maxTps !== undefined && patch.maxTps !== null && (!Number.isInteger(patch.maxTps) || patch.maxTps < 0)) {
      throw invalidField('maxTps', 'a whole number ≥ 0, or null for the server default');
    }
    const country = patch.defaultCountry ? patch.defaultCountry.toUpperCase() : patch.defaultCountry;
    if (country && !/^[A-Z]{2}$/.test(country)) throw invalidField('defaultCountry', 'ISO 3166 alpha-2 code');
    if (patch.numberValidation != null && !NUMBER_VALIDATIONS.includes(patch.numberValidation)) {
      throw invalidField('numberValidation', `one of ${NUMBER_VALIDATIONS.join(', ')}, or null for the default`);
    }
    let creditLimit: number | null = null;
    if (patch.creditLimit !== undefined) {
      let parsed: ParsedAmount;
      try {
        parsed = parseAmount(patch.creditLimit, { allowZero: true });
      } catch (err) {
        throw invalidAmount('creditLimit', err);
      }
      // The currency never changes, so reading it before the update is safe.
      creditLimit = placesOf('creditLimit', parsed, (await this.get(ref)).currency);
    }
    const { rows } = await this.db.query<AccountRow>(
      `UPDATE accounts SET
         max_tps = CASE WHEN $2::bool THEN $3::int ELSE max_tps END,
         default_country = CASE WHEN $4::bool THEN $5::text ELSE default_country END,
         allowed_recipients = CASE WHEN $6::bool THEN $7::text[] ELSE allowed_recipients END,
         credit_limit_micros = coalesce($8::int8, credit_limit_micros),
         number_validation = CASE WHEN $9::bool THEN $10::text ELSE number_validation END,
         updated_at = now()
       WHERE id = $1 OR name = $1 RETURNING ${ACCOUNT_COLUMNS}`,
      [
        ref,
        patch.maxTps !== undefined,
        patch.maxTps ?? null,
        country !== undefined,
        country ?? null,
        patch.allowedRecipients !== undefined,
        patch.allowedRecipients ?? null,
        creditLimit,
        patch.numberValidation !== undefined,
        patch.numberValidation ?? null,
      ],
    );
    if (!rows[0]) throw new ApiError('ACCOUNT_NOT_FOUND');
    this.onChange(rows[0].id);
    return toAccount(rows[0]);
  }

  /** Numbers (long or short codes) the account owns: MO messages to them reach its SMPP binds. */
  async addNumber(ref: string, number: string): Promise<void> {
    const digits = number.replace(/^\+/, '');
    if (!/^[0-9]{3,15}$/.test(digits)) throw invalidField('number', '3 to 15 digits');
    const account = await this.get(ref);
    try {
      await this.db.query(`INSERT INTO account_numbers (number, account_id) VALUES ($1, $2)`, [digits, account.id]);
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new ApiError('CONFLICT', { message: `number ${digits} is already assigned` });
      throw err;
    }
  }

  async removeNumber(ref: string, number: string): Promise<boolean> {
    const account = await this.get(ref);
    const r = await this.db.query(`DELETE FROM account_numbers WHERE number = $1 AND account_id = $2`, [number.replace(/^\+/, ''), account.id]);
    return r.rowCount > 0;
  }

  async numbers(ref: string): Promise<string[]> {
    const account = await this.get(ref);
    const { rows } = await this.db.query<{ number: string }>(`SELECT number FROM account_numbers WHERE account_id = $1 ORDER BY number`, [account.id]);
    return rows.map((r) => r.number);
  }

  /** The account owning a number, or null. */
  async ownerOfNumber(number: string): Promise<string | null> {
    const { rows } = await this.db.query<{ account_id: string }>(`SELECT account_id FROM account_numbers WHERE number = $1`, [number.replace(/^\+/, '')]);
    return rows[0]?.account_id ?? null;
  }

  /** Adds credit (a positive amount in the account currency), recording the transaction and who made it. */
  credit(ref: string, amount: number | string, opts: MovementOptions = {}): Promise<Movement> {
    return this.move('credit', ref, amount, opts);
  }

  /**
   * Takes credit away (a positive amount), recording the transaction and who made it. Refused with
   * CREDIT_LIMIT_EXCEEDED when it would take the balance below −creditLimit (below zero for an account without one).
   */
  debit(ref: string, amount: number | string, opts: MovementOptions = {}): Promise<Movement> {
    return this.move('debit', ref, amount, opts);
  }

  /**
   * One admin balance movement: the account row is locked, so concurrent movements (and message debits, which lock
   * it too) are decided one after another against the balance the one before left.
   */
  private async move(kind: 'credit' | 'debit', ref: string, amount: number | string, opts: MovementOptions): Promise<Movement> {
    let parsed: ParsedAmount;
    try {
      parsed = parseAmount(amount);
    } catch (err) {
      if (err instanceof AmountError && err.rule === 'negative') {
        throw invalidAmount(
          'amount',
          err,
          kind === 'credit'
            ? 'amount must be positive; to take credit away, debit it (POST /admin/accounts/{ref}/debit, `ferry accounts debit NAME AMOUNT`)'
            : 'amount must be positive; a debit takes that amount away (to add credit, POST /admin/accounts/{ref}/credit)',
        );
      }
      throw invalidAmount('amount', err);
    }
    return this.db.tx(async (q) => {
      const { rows } = await q.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1 OR name = $1 LIMIT 1 FOR UPDATE`, [ref]);
      const row = rows[0];
      if (!row) throw new ApiError('ACCOUNT_NOT_FOUND');
      const micros = placesOf('amount', parsed, row.currency);
      const before = Number(row.balance_micros);
      const limit = Number(row.credit_limit_micros);
      const after = kind === 'credit' ? before + micros : before - micros;
      if (after > MAX_MICROS) {
        throw new ApiError('INVALID_AMOUNT', {
          message: `amount would take the balance of ${row.name} to ${formatMicros(after)} ${row.currency}, beyond ${formatMicros(MAX_MICROS)}, the largest Ferry keeps`,
          data: { field: 'amount', rule: 'range' },
        });
      }
      if (after < -limit) {
        const available = before + limit;
        throw new ApiError('CREDIT_LIMIT_EXCEEDED', {
          message:
            `A debit of ${formatMicros(micros)} ${row.currency} would take the balance of ${row.name} to ${formatMicros(after)}, below ` +
            (limit ? `its credit limit of ${formatMicros(limit)} (-${formatMicros(limit)})` : 'zero (it has no credit limit)') +
            `; at most ${formatMicros(Math.max(0, available))} can be debited now`,
          data: {
            amount: fromMicros(micros),
            balance: fromMicros(before),
            creditLimit: fromMicros(limit),
            available: fromMicros(Math.max(0, available)),
            currency: row.currency,
          },
        });
      }
      const updated = await q.query<AccountRow>(`UPDATE accounts SET balance_micros = $2, updated_at = now() WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`, [row.id, after]);
      const reference = opts.reference ?? null;
      const actor = opts.actor ?? null;
      const signed = kind === 'credit' ? micros : -micros;
      const tx = await q.query<{ id: number; created_at: Date }>(
        `INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference, actor)
         VALUES ($1, $2, $3, $4, $5, coalesce($6, 'system')) RETURNING id, created_at`,
        [row.id, signed, after, kind, reference, actor],
      );
      return {
        account: toAccount(updated.rows[0]),
        transaction: {
          id: Number(tx.rows[0].id),
          kind,
          amount: fromMicros(signed),
          balanceAfter: fromMicros(after),
          reference,
          actor: actor ?? 'system',
          createdAt: new Date(tx.rows[0].created_at).toISOString(),
        },
      };
    });
  }

  /** Sets (or replaces) the account's SMPP credentials; returns the clear password once. */
  async setSmppCredentials(
    ref: string,
    input: { systemId?: string | null; password?: string | null; allowedIps?: string[] | null; maxBinds?: number | null },
  ): Promise<{ systemId: string; password: string; allowedIps: string[] | null; maxBinds: number }> {
    const account = await this.get(ref);
    const password = input.password ?? randomFrom(PASSWORD_ALPHABET, 8);
    validateSmppPassword(password);
    const existing = await this.db.query<{ system_id: string; allowed_ips: string[] | null; max_binds: number }>(
      `SELECT system_id, allowed_ips, max_binds FROM smpp_credentials WHERE account_id = $1 ORDER BY created_at LIMIT 1`,
      [account.id],
    );
    const systemId = input.systemId ?? existing.rows[0]?.system_id ?? account.name.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 15);
    if (!SYSTEM_ID.test(systemId)) throw invalidField('systemId', 'at most 15 characters: letters, digits, _ . -');
    const allowedIps = input.allowedIps === undefined ? (existing.rows[0]?.allowed_ips ?? null) : input.allowedIps;
    const maxBinds = input.maxBinds ?? existing.rows[0]?.max_binds ?? 10;
    const hash = await hashPassword(password);
    await this.db.tx(async (q) => {
      const owner = await q.query<{ account_id: string }>(`SELECT account_id FROM smpp_credentials WHERE system_id = $1`, [systemId]);
      if (owner.rows[0] && owner.rows[0].account_id !== account.id) throw new ApiError('CONFLICT', { message: `SMPP system_id ${systemId} belongs to another account` });
      await q.query(`DELETE FROM smpp_credentials WHERE account_id = $1`, [account.id]);
      await q.query(
        `INSERT INTO smpp_credentials (system_id, account_id, password_hash, allowed_ips, max_binds) VALUES ($1, $2, $3, $4, $5)`,
        [systemId, account.id, hash, allowedIps, maxBinds],
      );
    });
    return { systemId, password, allowedIps, maxBinds };
  }

  async smppCredentials(ref: string): Promise<SmppCredentials | null> {
    const account = await this.get(ref);
    const { rows } = await this.db.query<{ system_id: string; account_id: string; allowed_ips: string[] | null; max_binds: number }>(
      `SELECT system_id, account_id, allowed_ips, max_binds FROM smpp_credentials WHERE account_id = $1 ORDER BY created_at LIMIT 1`,
      [account.id],
    );
    const r = rows[0];
    return r ? { systemId: r.system_id, accountId: r.account_id, allowedIps: r.allowed_ips, maxBinds: r.max_binds } : null;
  }

  /**
   * Checks an SMPP bind. The outcomes map to bind_resp statuses: unknown system_id → ESME_RINVSYSID,
   * wrong password → ESME_RINVPASWD, suspended or an address the credentials do not allow → ESME_RBINDFAIL.
   * `addressAllowed` is asked before the password is: from an address that may not bind, the answer is the same
   * whatever the password, so such an address learns nothing by guessing (and costs no scrypt).
   */
  async checkSmppBind(
    systemId: string,
    password: string,
    addressAllowed: (allowedIps: string[] | null) => boolean = () => true,
  ): Promise<{ ok: true; account: Account; credentials: SmppCredentials } | { ok: false; reason: 'unknown_system_id' | 'wrong_password' | 'suspended' | 'ip_not_allowed' }> {
    const { rows } = await this.db.query<{ account_id: string; password_hash: string; allowed_ips: string[] | null; max_binds: number }>(
      `SELECT account_id, password_hash, allowed_ips, max_binds FROM smpp_credentials WHERE system_id = $1`,
      [systemId],
    );
    const cred = rows[0];
    if (!cred) return { ok: false, reason: 'unknown_system_id' };
    if (!addressAllowed(cred.allowed_ips)) return { ok: false, reason: 'ip_not_allowed' };
    if (!(await verifyPassword(password, cred.password_hash))) return { ok: false, reason: 'wrong_password' };
    const account = await this.get(cred.account_id);
    if (account.status !== 'active') return { ok: false, reason: 'suspended' };
    return { ok: true, account, credentials: { systemId, accountId: cred.account_id, allowedIps: cred.allowed_ips, maxBinds: cred.max_binds } };
  }
}

export interface MovementOptions {
  /** A note kept with the transaction (an invoice number, why). */
  reference?: string | null;
  /** Who asked, kept with the transaction; default 'system'. */
  actor?: string | null;
}

/** An admin balance movement: the account after it and its account_transactions row. */
export interface Movement {
  account: Account;
  transaction: {
    id: number;
    kind: 'credit' | 'debit';
    /** Signed: negative for a debit. */
    amount: number;
    balanceAfter: number;
    reference: string | null;
    actor: string;
    createdAt: string;
  };
}

/** INVALID_AMOUNT for a field, from the money parser's refusal. */
function invalidAmount(field: string, err: unknown, message?: string): ApiError {
  if (!(err instanceof AmountError)) throw err;
  return new ApiError('INVALID_AMOUNT', { message: message ?? `${field} ${err.message}`, data: { field, rule: err.rule } });
}

function placesOf(field: string, amount: ParsedAmount, currency: string): number {
  try {
    return checkPlaces(amount, currency);
  } catch (err) {
    throw invalidAmount(field, err);
  }
}

function validateSmppPassword(pw: string): void {
  if (pw.length < 1 || pw.length > 8 || !/^[\x21-\x7e]+$/.test(pw)) {
    throw invalidField('smppPassword', '1 to 8 printable ASCII characters (SMPP v3.4 limit)');
  }
}
