import type { Db } from '../../store/types.js';
import { newId } from '../../util/ids.js';

export interface EmailTemplate {
  id: string;
  name: string;
  subject: string;
  html: string | null;
  text: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  name: string;
  subject: string;
  html: string | null;
  text: string | null;
  created_at: string | number;
  updated_at: string | number;
}

const view = (r: Row): EmailTemplate => ({
  id: r.id,
  name: r.name,
  subject: r.subject,
  html: r.html,
  text: r.text,
  createdAt: new Date(Number(r.created_at)).toISOString(),
  updatedAt: new Date(Number(r.updated_at)).toISOString(),
});

/** An account's email templates (Handlebars sources; rendered at send time by render.ts). */
export class TemplateStore {
  constructor(
    private readonly db: Db,
    private readonly clock: () => number = Date.now,
  ) {}

  async create(accountId: string, t: { name: string; subject: string; html?: string | null; text?: string | null }): Promise<EmailTemplate> {
    const now = this.clock();
    const { rows } = await this.db.query<Row>(
      `INSERT INTO email_templates (id, account_id, name, subject, html, text, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
      [newId('tpl_', now), accountId, t.name, t.subject, t.html ?? null, t.text ?? null, now],
    );
    return view(rows[0]);
  }

  async get(accountId: string, id: string): Promise<EmailTemplate | null> {
    const { rows } = await this.db.query<Row>(`SELECT * FROM email_templates WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return rows[0] ? view(rows[0]) : null;
  }

  async list(accountId: string): Promise<EmailTemplate[]> {
    const { rows } = await this.db.query<Row>(`SELECT * FROM email_templates WHERE account_id = $1 ORDER BY created_at, id LIMIT 1000`, [accountId]);
    return rows.map(view);
  }

  async update(accountId: string, id: string, t: { name?: string; subject?: string; html?: string | null; text?: string | null }): Promise<EmailTemplate | null> {
    const { rows } = await this.db.query<Row>(
      `UPDATE email_templates SET name = COALESCE($3, name), subject = COALESCE($4, subject),
         html = CASE WHEN $5::bool THEN $6 ELSE html END, text = CASE WHEN $7::bool THEN $8 ELSE text END, updated_at = $9
       WHERE account_id = $1 AND id = $2 RETURNING *`,
      [accountId, id, t.name ?? null, t.subject ?? null, t.html !== undefined, t.html ?? null, t.text !== undefined, t.text ?? null, this.clock()],
    );
    return rows[0] ? view(rows[0]) : null;
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    const r = await this.db.query(`DELETE FROM email_templates WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return r.rowCount > 0;
  }
}
