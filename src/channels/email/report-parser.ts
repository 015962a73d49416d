import type { ParsedMail } from 'mailparser';

/** What a DSN or ARF report says about one message. */
export type MailReport =
  | { kind: 'dsn'; action: 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded'; status: string; diagnostic: string | null; recipient: string | null; originalMessageId: string | null }
  | { kind: 'complaint'; feedbackType: string; recipient: string | null; originalMessageId: string | null };

/** RFC 822-style header fields of a report part, folded lines unfolded; several blocks separated by blank lines. */
function fieldBlocks(text: string): Array<Record<string, string>> {
  const blocks: Array<Record<string, string>> = [];
  for (const chunk of text.replace(/\r\n/g, '\n').split(/\n\s*\n/)) {
    const fields: Record<string, string> = {};
    for (const line of chunk.replace(/\n[ \t]+/g, ' ').split('\n')) {
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
      if (m) fields[m[1].toLowerCase()] = m[2].trim();
    }
    if (Object.keys(fields).length) blocks.push(fields);
  }
  return blocks;
}

function stripType(v: string | undefined): string | null {
  if (!v) return null;
  const i = v.indexOf(';');
  return (i >= 0 ? v.slice(i + 1) : v).trim().replace(/^<|>$/g, '') || null;
}

/** The Ferry message id in the original message's headers (X-Ferry-Message-Id), when the report quotes them. */
function originalId(parts: ReadonlyArray<{ type: string; body: string }>, parsed: ParsedMail): string | null {
  const texts = [...parts.filter((p) => /^(text\/rfc822-headers|message\/rfc822)$/.test(p.type)).map((p) => p.body), ...parsed.attachments.map((a) => a.content.toString('utf8'))];
  for (const t of texts) {
    const m = /^X-Ferry-Message-Id:\s*(\S+)/im.exec(t);
    if (m) return m[1];
  }
  return null;
}

/**
 * The top-level parts of a multipart/report, with their content types and decoded bodies. mailparser reads the mail
 * (headers, boundary, attachments) but folds message/delivery-status into the text body, so the report's own parts
 * are split here by the boundary it gives.
 */
function reportParts(raw: string, boundary: string): Array<{ type: string; body: string }> {
  const out: Array<{ type: string; body: string }> = [];
  const sections = raw.replace(/\r\n/g, '\n').split(`\n--${boundary}`);
  for (const sec of sections.slice(1)) {
    if (sec.startsWith('--')) break;
    const split = sec.indexOf('\n\n');
    const head = split >= 0 ? sec.slice(0, split) : sec;
    let body = split >= 0 ? sec.slice(split + 2) : '';
    const type = /^content-type:\s*([^;\s]+)/im.exec(head.replace(/\n[ \t]+/g, ' '))?.[1].toLowerCase() ?? 'text/plain';
    const cte = /^content-transfer-encoding:\s*(\S+)/im.exec(head)?.[1].toLowerCase();
    if (cte === 'base64') body = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
    else if (cte === 'quoted-printable') body = body.replace(/=\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    out.push({ type, body });
  }
  return out;
}

/**
 * Reads a report mail: a DSN (multipart/report; report-type=delivery-status, its message/delivery-status part: Action,
 * Status, Diagnostic-Code, Final-Recipient) or an ARF complaint (report-type=feedback-report, its
 * message/feedback-report part). Anything else is null (not a report: ignored).
 */
export async function parseReport(raw: Buffer | string): Promise<MailReport | null> {
  // Loaded at the first report: mailparser costs about 0.3 s of CPU to load, paid otherwise at every start.
  const parsed = await (await import('mailparser')).simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true });
  const ct = parsed.headers.get('content-type') as { value?: string; params?: Record<string, string> } | undefined;
  if (ct?.value?.toLowerCase() !== 'multipart/report' || !ct.params?.boundary) return null;
  const parts = reportParts(typeof raw === 'string' ? raw : raw.toString('utf8'), ct.params.boundary);
  const part = (type: string) => parts.find((p) => p.type === type);
  const dsn = part('message/delivery-status') ?? part('message/global-delivery-status');
  if (dsn) {
    const blocks = fieldBlocks(dsn.body);
    const rcpt = blocks.find((b) => b.action) ?? null;
    if (!rcpt) return null;
    const action = rcpt.action.toLowerCase() as Extract<MailReport, { kind: 'dsn' }>['action'];
    return {
      kind: 'dsn',
      action,
      status: rcpt.status ?? (action === 'failed' ? '5.0.0' : '4.0.0'),
      diagnostic: stripType(rcpt['diagnostic-code']),
      recipient: stripType(rcpt['final-recipient'] ?? rcpt['original-recipient']),
      originalMessageId: originalId(parts, parsed),
    };
  }
  const arf = part('message/feedback-report');
  if (arf) {
    const f = fieldBlocks(arf.body)[0] ?? {};
    return { kind: 'complaint', feedbackType: f['feedback-type'] ?? 'abuse', recipient: stripType(f['original-rcpt-to']), originalMessageId: originalId(parts, parsed) };
  }
  return null;
}
