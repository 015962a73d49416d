import Handlebars from 'handlebars';
import { convert } from 'html-to-text';
import juice from 'juice';
import sanitizeHtml from 'sanitize-html';

/** A template variable the data does not give (strict mode): a clear error at send or preview time. */
export class TemplateRenderError extends Error {
  constructor(
    readonly part: 'subject' | 'html' | 'text',
    message: string,
  ) {
    super(`${part}: ${message}`);
  }
}

const hb = Handlebars.create();

/** Compiled templates by source, so a bulk send compiles each part once. */
const compiled = new Map<string, HandlebarsTemplateDelegate>();

function compile(source: string, noEscape: boolean): HandlebarsTemplateDelegate {
  const key = `${noEscape ? 1 : 0}${source}`;
  let fn = compiled.get(key);
  if (!fn) {
    fn = hb.compile(source, { strict: true, noEscape, knownHelpersOnly: true, knownHelpers: { if: true, unless: true, each: true, with: true } });
    if (compiled.size > 500) compiled.clear();
    compiled.set(key, fn);
  }
  return fn;
}

function run(part: 'subject' | 'html' | 'text', source: string, data: Record<string, unknown>): string {
  try {
    // Subject and text are not HTML: no entity escaping there.
    return compile(source, part !== 'html')(data);
  } catch (err) {
    throw new TemplateRenderError(part, (err as Error).message.split('\n')[0].replace(/ - \d+:\d+$/, '').replace(/ in (undefined|\[object Object\])$/, ' in data'));
  }
}

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    ...sanitizeHtml.defaults.allowedTags,
    'img', 'style', 'center', 'font', 'span', 'html', 'head', 'body', 'title', 'meta',
  ],
  allowVulnerableTags: true, // <style>: mail clients need it for juice; scripts stay out (never allowed)
  allowedAttributes: {
    '*': ['style', 'class', 'id', 'align', 'valign', 'width', 'height', 'bgcolor', 'color', 'border', 'cellpadding', 'cellspacing', 'dir', 'lang', 'title'],
    a: ['href', 'name', 'target', 'rel'],
    img: ['src', 'alt', 'width', 'height'],
    font: ['face', 'size', 'color'],
    meta: ['charset', 'name', 'content'],
  },
  allowedSchemes: ['http', 'https', 'mailto', 'tel'],
  allowedSchemesByTag: { img: ['http', 'https', 'cid', 'data'] },
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
};

/** Customer HTML made safe for mail: no scripts, no event attributes, only allow-listed URL schemes. */
export function sanitize(html: string): string {
  return sanitizeHtml(html, SANITIZE);
}

export interface Rendered {
  subject: string;
  html?: string;
  text?: string;
}

/**
 * Renders a message: Handlebars variables (strict: a missing one throws TemplateRenderError), the HTML sanitised
 * (after substitution, so data cannot smuggle a script in through {{{triple}}} either) with its CSS inlined for mail
 * clients, and a text part generated from the HTML when none is given.
 */
export function render(parts: { subject: string; html?: string | null; text?: string | null }, data: Record<string, unknown> | null): Rendered {
  const sub = (part: 'subject' | 'html' | 'text', s: string) => (data ? run(part, s, data) : s);
  const subject = sub('subject', parts.subject).replace(/[\r\n]+/g, ' ');
  let html: string | undefined;
  if (parts.html) {
    const safe = sanitize(sub('html', parts.html));
    html = /<style[\s>]/i.test(safe) ? juice(safe) : safe;
  }
  const text = parts.text ? sub('text', parts.text) : html ? convert(html, { wordwrap: 78, selectors: [{ selector: 'img', format: 'skip' }] }) : undefined;
  return { subject, html, text };
}

/** Throws TemplateRenderError when a part is not valid Handlebars (checked when a template is stored). */
export function checkSyntax(parts: { subject?: string | null; html?: string | null; text?: string | null }): void {
  for (const part of ['subject', 'html', 'text'] as const) {
    const s = parts[part];
    if (!s) continue;
    try {
      hb.parse(s);
    } catch (err) {
      throw new TemplateRenderError(part, (err as Error).message.split('\n')[0]);
    }
  }
}
