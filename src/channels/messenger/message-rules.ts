import type { FieldError } from '../../http/errors.js';

/** The message types POST /send takes (the Cloud API's). */
export const MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'interactive', 'template'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

export const LIMITS = {
  textChars: 4096,
  captionChars: 1024,
  replyButtons: 3,
  buttonTitleChars: 20,
  listRows: 10,
  rowTitleChars: 24,
  interactiveBodyChars: 1024,
  headerChars: 60,
  footerChars: 60,
} as const;

/** E.164 without the plus: 8 to 15 digits, not starting with 0. A leading + is accepted and dropped. */
export function normalizeE164(raw: string): string | null {
  const s = raw.trim().replace(/^\+/, '');
  return /^[1-9]\d{7,14}$/.test(s) ? s : null;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const chars = (s: string) => [...s].length;

function wellFormedHttps(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' && !!u.hostname && !u.username && !u.password;
  } catch {
    return false;
  }
}

/**
 * The rules of a message's object that the route's JSON schema does not say: lengths in characters, the counts of
 * buttons and rows, unique ids, well-formed CTA URLs. Returns every problem (empty: valid). The media link's type
 * and size are checked by fetching it (MediaChecker), not here.
 */
export function checkMessage(type: MessageType, content: unknown): FieldError[] {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field: `${type}.${field}`.replace(/\.$/, ''), message });
  if (!isObj(content)) return [{ field: type, message: `a ${type} message needs its "${type}" object` }];
  switch (type) {
    case 'text': {
      const body = content.body;
      if (typeof body !== 'string' || !body.length) err('body', 'required, a non-empty string');
      else if (chars(body) > LIMITS.textChars) err('body', `at most ${LIMITS.textChars} characters`);
      if (content.previewUrl !== undefined && typeof content.previewUrl !== 'boolean') err('previewUrl', 'a boolean');
      break;
    }
    case 'image':
    case 'video':
    case 'audio':
    case 'document': {
      if (typeof content.link !== 'string' || !content.link) err('link', 'required: a public HTTPS URL of the media');
      if (content.caption !== undefined) {
        if (type === 'audio') err('caption', 'audio takes no caption');
        else if (typeof content.caption !== 'string' || chars(content.caption) > LIMITS.captionChars) err('caption', `a string of at most ${LIMITS.captionChars} characters`);
      }
      if (type === 'document') {
        if (typeof content.filename !== 'string' || !content.filename.trim() || content.filename.length > 240) err('filename', 'required for a document: 1–240 characters');
      } else if (content.filename !== undefined) err('filename', 'only a document takes a filename');
      break;
    }
    case 'interactive':
      checkInteractive(content, err);
      break;
    case 'template': {
      if (typeof content.name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(content.name)) err('name', 'required: lower case letters, digits and _');
      const lang = content.language;
      const code = isObj(lang) ? lang.code : lang;
      if (typeof code !== 'string' || !/^[a-z]{2,3}(_[A-Z]{2})?$/.test(code)) err('language', 'required: a language code such as en_US (or {code})');
      if (content.components !== undefined && !Array.isArray(content.components)) err('components', 'an array');
      break;
    }
  }
  return errors;
}

function checkInteractive(c: Obj, err: (field: string, message: string) => void): void {
  const kind = c.type;
  if (kind !== 'button' && kind !== 'list' && kind !== 'cta_url') return err('type', 'one of button, list, cta_url');
  const body = c.body;
  if (!isObj(body) || typeof body.text !== 'string' || !body.text) err('body.text', 'required');
  else if (chars(body.text) > LIMITS.interactiveBodyChars) err('body.text', `at most ${LIMITS.interactiveBodyChars} characters`);
  if (c.header !== undefined) {
    if (!isObj(c.header) || typeof c.header.type !== 'string') err('header', 'an object with a type');
    else if (c.header.type === 'text' && (typeof c.header.text !== 'string' || chars(c.header.text) > LIMITS.headerChars)) err('header.text', `at most ${LIMITS.headerChars} characters`);
  }
  if (c.footer !== undefined && (!isObj(c.footer) || typeof c.footer.text !== 'string' || chars(c.footer.text) > LIMITS.footerChars)) {
    err('footer.text', `at most ${LIMITS.footerChars} characters`);
  }
  const action = c.action;
  if (!isObj(action)) return err('action', 'required');
  if (kind === 'button') {
    const buttons = action.buttons;
    if (!Array.isArray(buttons) || buttons.length < 1 || buttons.length > LIMITS.replyButtons) return err('action.buttons', `1 to ${LIMITS.replyButtons} reply buttons`);
    const ids = new Set<string>();
    buttons.forEach((b, i) => {
      const reply = isObj(b) ? b.reply : undefined;
      if (!isObj(b) || b.type !== 'reply' || !isObj(reply)) return err(`action.buttons[${i}]`, '{type: "reply", reply: {id, title}}');
      if (typeof reply.id !== 'string' || !reply.id || reply.id.length > 256) err(`action.buttons[${i}].reply.id`, '1–256 characters');
      else if (ids.has(reply.id)) err(`action.buttons[${i}].reply.id`, 'button ids must be unique');
      else ids.add(reply.id);
      if (typeof reply.title !== 'string' || !reply.title || chars(reply.title) > LIMITS.buttonTitleChars) err(`action.buttons[${i}].reply.title`, `1–${LIMITS.buttonTitleChars} characters`);
    });
  } else if (kind === 'list') {
    if (typeof action.button !== 'string' || !action.button || chars(action.button) > LIMITS.buttonTitleChars) err('action.button', `the list button's text, 1–${LIMITS.buttonTitleChars} characters`);
    const sections = action.sections;
    if (!Array.isArray(sections) || !sections.length || sections.length > 10) return err('action.sections', '1 to 10 sections');
    let rows = 0;
    const ids = new Set<string>();
    sections.forEach((s, i) => {
      if (!isObj(s) || !Array.isArray(s.rows) || !s.rows.length) return err(`action.sections[${i}].rows`, 'at least one row');
      s.rows.forEach((r: unknown, j: number) => {
        rows++;
        const f = `action.sections[${i}].rows[${j}]`;
        if (!isObj(r) || typeof r.id !== 'string' || !r.id || r.id.length > 200) return err(`${f}.id`, '1–200 characters');
        if (ids.has(r.id)) err(`${f}.id`, 'row ids must be unique');
        ids.add(r.id);
        if (typeof r.title !== 'string' || !r.title || chars(r.title) > LIMITS.rowTitleChars) err(`${f}.title`, `1–${LIMITS.rowTitleChars} characters`);
      });
    });
    if (rows > LIMITS.listRows) err('action.sections', `at most ${LIMITS.listRows} rows in all (got ${rows})`);
  } else {
    const p = action.parameters;
    if (action.name !== 'cta_url') err('action.name', 'must be "cta_url"');
    if (!isObj(p)) return err('action.parameters', '{display_text, url}');
    if (typeof p.display_text !== 'string' || !p.display_text || chars(p.display_text) > LIMITS.buttonTitleChars) err('action.parameters.display_text', `1–${LIMITS.buttonTitleChars} characters`);
    if (!wellFormedHttps(p.url)) err('action.parameters.url', 'a well-formed https URL');
  }
}
