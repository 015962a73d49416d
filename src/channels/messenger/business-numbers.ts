import type { AccountService } from '../../accounts/account-service.js';
import { ApiError } from '../../http/errors.js';
import type { SecretCipher } from '../../security/cipher.js';
import type { ModuleCredentials, OpenedCredential } from '../../security/credential-store.js';
import type { Db } from '../../store/types.js';
import { unseal } from './sealed-credentials.js';

const SETTINGS = ['accessToken', 'appSecret', 'verifyToken'] as const;
type Setting = (typeof SETTINGS)[number];

/** A number's credential in the messenger module's credential store. */
export function credentialName(phoneNumberId: string, setting: Setting): string {
  return `number:${phoneNumberId}:${setting}`;
}

/** A business number with its credentials opened: for sending and verifying only, never for an answer or a log line. */
export interface BusinessNumber {
  phoneNumberId: string;
  /** The owning account; null: the config's shared number (serves the accounts without a number of their own). */
  accountId: string | null;
  displayNumber: string | null;
  wabaId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string | null;
  source: 'config' | 'admin';
}

/** What the admin API shows of a number: credentials as fingerprints only. */
export interface NumberView {
  phoneNumberId: string;
  account: string | null;
  displayNumber: string | null;
  wabaId: string;
  source: 'config' | 'admin';
  credentials: { accessToken: string; appSecret: string; verifyToken: string | null };
  createdAt: string | null;
  updatedAt: string | null;
}

export interface NewNumber {
  phoneNumberId: string;
  account: string;
  displayNumber?: string | null;
  wabaId: string;
  accessToken: string;
  appSecret: string;
  verifyToken?: string | null;
}

type Row = {
  phone_number_id: string;
  account_id: string;
  display_number: string | null;
  waba_id: string;
  created_at: string | number;
  updated_at: string | number;
};

export interface BusinessNumbersOptions {
  db: Db;
  accounts: AccountService;
  /** Opens credentials given sealed (`sealed:…`, from `ferry messenger seal`). */
  cipher: SecretCipher;
  /** The module's credential store (ctx.credentials): a number's credentials are `number:<phone number id>:<setting>`. */
  credentials: ModuleCredentials;
  /** The number of the config, credentials opened. */
  config: Omit<BusinessNumber, 'accountId' | 'source'>;
  /** messenger.account: the config number's owner (id or name); null: it serves every account without a number. */
  configAccount: string | null;
  clock?: () => number;
}

/**
 * The business numbers: the config's one and those the operator adds (admin API, `ferry messenger numbers`). Rows are
 * read from SQL at each use (no cache: a number added or rotated on one instance is used by every other at once; a
 * read by primary key per send or webhook is cheap beside the HTTP call it goes with).
 */
export class BusinessNumbers {
  private configOwnerId: string | null = null;
  private readonly clock: () => number;

  constructor(private readonly o: BusinessNumbersOptions) {
    this.clock = o.clock ?? Date.now;
  }

  /** The config number's owning account id; null while it serves every account without a number (or its account does not exist yet). */
  async configOwner(): Promise<string | null> {
    if (this.o.configAccount === null) return null;
    if (this.configOwnerId === null) this.configOwnerId = (await this.o.accounts.find(this.o.configAccount))?.id ?? null;
    return this.configOwnerId;
  }

  /** Whether the config number has an owner named (it then serves that account only, even before it exists). */
  get configOwned(): boolean {
    return this.o.configAccount !== null;
  }

  private async configNumber(): Promise<BusinessNumber> {
    return { ...this.o.config, accountId: await this.configOwner(), source: 'config' };
  }

  /** The rows with their credentials (one read of the credential store per account). */
  private async open(rows: readonly Row[]): Promise<BusinessNumber[]> {
    const byAccount = new Map<string, OpenedCredential[]>();
    for (const accountId of new Set(rows.map((r) => r.account_id))) {
      const names = rows.filter((r) => r.account_id === accountId).flatMap((r) => SETTINGS.map((s) => credentialName(r.phone_number_id, s)));
      byAccount.set(accountId, await this.o.credentials.open({ accountId, names }));
    }
    return rows.map((r) => {
      const found = new Map((byAccount.get(r.account_id) ?? []).map((c) => [c.name, c.value]));
      const value = (setting: Setting) => found.get(credentialName(r.phone_number_id, setting)) ?? null;
      const accessToken = value('accessToken');
      const appSecret = value('appSecret');
      if (accessToken === null || appSecret === null) throw new Error(`messenger number ${r.phone_number_id}: its credentials are missing from the credential store`);
      return {
        phoneNumberId: r.phone_number_id,
        accountId: r.account_id,
        displayNumber: r.display_number,
        wabaId: r.waba_id,
        accessToken,
        appSecret,
        verifyToken: value('verifyToken'),
        source: 'admin' as const,
      };
    });
  }

  private async openOne(r: Row | undefined): Promise<BusinessNumber | null> {
    return r ? (await this.open([r]))[0] : null;
  }

  /** A number by its phone number id (the config's or a row). */
  async byId(phoneNumberId: string): Promise<BusinessNumber | null> {
    if (phoneNumberId === this.o.config.phoneNumberId) return this.configNumber();
    const { rows } = await this.o.db.query<Row>(`SELECT * FROM messenger_numbers WHERE phone_number_id = $1`, [phoneNumberId]);
    return this.openOne(rows[0]);
  }

  /** The number of a WhatsApp business account (template reviews and quality updates name the WABA). */
  async byWaba(wabaId: string): Promise<BusinessNumber | null> {
    const { rows } = await this.o.db.query<Row>(`SELECT * FROM messenger_numbers WHERE waba_id = $1 ORDER BY created_at LIMIT 1`, [wabaId]);
    if (rows[0]) return this.openOne(rows[0]);
    return wabaId === this.o.config.wabaId ? this.configNumber() : null;
  }

  /**
   * The number an account sends from: `from` when it is one of the account's, else the account's first number, else
   * the config number when it serves this account (its owner, or any account without a number while it has no owner).
   */
  async forAccount(accountId: string, from?: string | null): Promise<BusinessNumber | null> {
    const { rows } = await this.o.db.query<Row>(`SELECT * FROM messenger_numbers WHERE account_id = $1 ORDER BY created_at, phone_number_id`, [accountId]);
    const own = await this.open(rows);
    const owner = await this.configOwner();
    const configServes = owner === accountId || (!this.configOwned && own.length === 0);
    if (from) {
      const found = own.find((n) => n.phoneNumberId === from);
      if (found) return found;
      return from === this.o.config.phoneNumberId && configServes ? this.configNumber() : null;
    }
    if (own.length) return own[0];
    return configServes ? this.configNumber() : null;
  }

  /** Every verify token a webhook handshake may present (each app's callback is set up with its own). */
  async verifyTokens(): Promise<string[]> {
    const tokens = (await this.o.credentials.open({ prefix: 'number:' })).filter((c) => c.name.endsWith(':verifyToken')).map((c) => c.value);
    return [this.o.config.verifyToken, ...tokens].filter((v): v is string => !!v);
  }

  fingerprint(value: string): string {
    return this.o.credentials.fingerprint(value);
  }

  private async view(n: BusinessNumber, times: { created: number | null; updated: number | null }): Promise<NumberView> {
    const account = n.accountId === null ? null : ((await this.o.accounts.find(n.accountId))?.name ?? n.accountId);
    return {
      phoneNumberId: n.phoneNumberId,
      account,
      displayNumber: n.displayNumber,
      wabaId: n.wabaId,
      source: n.source,
      credentials: { accessToken: this.fingerprint(n.accessToken), appSecret: this.fingerprint(n.appSecret), verifyToken: n.verifyToken ? this.fingerprint(n.verifyToken) : null },
      createdAt: times.created === null ? null : new Date(times.created).toISOString(),
      updatedAt: times.updated === null ? null : new Date(times.updated).toISOString(),
    };
  }

  /** The config number first, then the rows (of one account when given). */
  async list(account?: string): Promise<NumberView[]> {
    const accountId = account === undefined ? undefined : (await this.o.accounts.get(account)).id;
    const { rows } = await this.o.db.query<Row>(
      `SELECT * FROM messenger_numbers ${accountId ? 'WHERE account_id = $1' : ''} ORDER BY created_at, phone_number_id`,
      accountId ? [accountId] : [],
    );
    const out: NumberView[] = [];
    const cfg = await this.configNumber();
    if (accountId === undefined || cfg.accountId === accountId) out.push(await this.view(cfg, { created: null, updated: null }));
    const opened = await this.open(rows);
    for (const [i, r] of rows.entries()) out.push(await this.view(opened[i], { created: Number(r.created_at), updated: Number(r.updated_at) }));
    return out;
  }

  async show(phoneNumberId: string): Promise<NumberView> {
    if (phoneNumberId === this.o.config.phoneNumberId) return this.view(await this.configNumber(), { created: null, updated: null });
    const { rows } = await this.o.db.query<Row>(`SELECT * FROM messenger_numbers WHERE phone_number_id = $1`, [phoneNumberId]);
    if (!rows[0]) throw new ApiError('MESSENGER_NUMBER_NOT_FOUND');
    return this.view((await this.openOne(rows[0]))!, { created: Number(rows[0].created_at), updated: Number(rows[0].updated_at) });
  }

  /** A credential as given (plain, or sealed with this daemon's key), opened for the credential store. */
  private plain(setting: string, value: string): string {
    return unsealOrRefuse(this.o.cipher, setting, value);
  }

  async add(n: NewNumber): Promise<NumberView> {
    const account = await this.o.accounts.get(n.account);
    if (n.phoneNumberId === this.o.config.phoneNumberId) throw new ApiError('MESSENGER_NUMBER_EXISTS', { message: 'This phone number id is the config number (messenger.phoneNumberId)' });
    const { rows: existing } = await this.o.db.query(`SELECT 1 FROM messenger_numbers WHERE phone_number_id = $1`, [n.phoneNumberId]);
    if (existing.length) throw new ApiError('MESSENGER_NUMBER_EXISTS');
    // A WABA is one business's: its template reviews and quality updates go to one account.
    const { rows: waba } = await this.o.db.query<{ account_id: string }>(`SELECT account_id FROM messenger_numbers WHERE waba_id = $1 AND account_id <> $2 LIMIT 1`, [n.wabaId, account.id]);
    const configWabaElsewhere = n.wabaId === this.o.config.wabaId && (await this.configOwner()) !== account.id;
    if (waba.length || configWabaElsewhere) {
      throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'wabaId', message: 'this WhatsApp business account belongs to another account (or to the config number)' }] } });
    }
    const now = this.clock();
    const given: Array<[Setting, string]> = [
      ['accessToken', this.plain('accessToken', n.accessToken)],
      ['appSecret', this.plain('appSecret', n.appSecret)],
      ...(n.verifyToken ? [['verifyToken', this.plain('verifyToken', n.verifyToken)] as [Setting, string]] : []),
    ];
    // The row and its credentials commit together.
    const added = await this.o.db.tx(async (q) => {
      const r = await q.query(
        `INSERT INTO messenger_numbers (phone_number_id, account_id, display_number, waba_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (phone_number_id) DO NOTHING`,
        [n.phoneNumberId, account.id, n.displayNumber ?? null, n.wabaId, now],
      );
      if (!r.rowCount) return false;
      for (const [setting, value] of given) await this.o.credentials.put(account.id, credentialName(n.phoneNumberId, setting), value, q);
      return true;
    });
    if (!added) throw new ApiError('MESSENGER_NUMBER_EXISTS');
    return this.show(n.phoneNumberId);
  }

  /** New credentials for a number (those not given are kept). */
  async rotate(phoneNumberId: string, c: { accessToken?: string; appSecret?: string; verifyToken?: string }): Promise<NumberView> {
    if (phoneNumberId === this.o.config.phoneNumberId) throw new ApiError('MESSENGER_NUMBER_NOT_FOUND', { message: 'The config number changes in the config file' });
    const given = (['accessToken', 'appSecret', 'verifyToken'] as const).flatMap((setting): Array<[Setting, string]> => (c[setting] ? [[setting, this.plain(setting, c[setting])]] : []));
    const rotated = await this.o.db.tx(async (q) => {
      const { rows } = await q.query<{ account_id: string }>(`UPDATE messenger_numbers SET updated_at = $2 WHERE phone_number_id = $1 RETURNING account_id`, [phoneNumberId, this.clock()]);
      if (!rows[0]) return false;
      // The old values are not kept: a rotation here follows a leaked or revoked credential.
      for (const [setting, value] of given) await this.o.credentials.put(rows[0].account_id, credentialName(phoneNumberId, setting), value, q);
      return true;
    });
    if (!rotated) throw new ApiError('MESSENGER_NUMBER_NOT_FOUND');
    return this.show(phoneNumberId);
  }

  async remove(phoneNumberId: string): Promise<void> {
    if (phoneNumberId === this.o.config.phoneNumberId) throw new ApiError('MESSENGER_NUMBER_NOT_FOUND', { message: 'The config number changes in the config file' });
    const removed = await this.o.db.tx(async (q) => {
      const { rows } = await q.query<{ account_id: string }>(`DELETE FROM messenger_numbers WHERE phone_number_id = $1 RETURNING account_id`, [phoneNumberId]);
      if (!rows[0]) return false;
      await this.o.credentials.remove(rows[0].account_id, { prefix: `number:${phoneNumberId}:` }, q);
      return true;
    });
    if (!removed) throw new ApiError('MESSENGER_NUMBER_NOT_FOUND');
  }
}

/** A sealed value this key cannot open is the caller's mistake (a VALIDATION_ERROR naming the field), not a 500. */
function unsealOrRefuse(cipher: SecretCipher, setting: string, value: string): string {
  try {
    return unseal(cipher, setting, value);
  } catch {
    throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: setting, message: 'sealed with another key than this daemon’s' }] } });
  }
}
