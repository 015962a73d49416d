import { createRequire } from 'node:module';
import type HandlebarsLib from 'handlebars';
import type * as HtmlToText from 'html-to-text';
import type juiceLib from 'juice';
import type sanitizeHtmlLib from 'sanitize-html';

/**
 * The mail libraries, loaded at the first render or template check: together they cost about half a second of CPU to
 * load, which every start of the daemon and of the CLI would otherwise pay whether it sends mail or not.
 */
interface MailLibs {
  hb: typeof HandlebarsLib;
  convert: typeof HtmlToText.convert;
  juice: typeof juiceLib;
  sanitizeHtml: typeof sanitizeHtmlLib;
  sanitizeOptions: sanitizeHtmlLib.IOptions;
}
const requireLib = createRequire(import.meta.url);
let libs: MailLibs | undefined;
function mailLibs(): MailLibs {
  if (!libs) {
    const sanitizeHtml = requireLib('sanitize-html') as typeof sanitizeHtmlLib;
    libs = {
      hb: (requireLib('handlebars') as typeof HandlebarsLib).create(),
      convert: (requireLib('html-to-text') as typeof HtmlToText).convert,
      juice: requireLib('juice') as typeof juiceLib,
      sanitizeHtml,
      sanitizeOptions: sanitizeOptions(sanitizeHtml.defaults.allowedTags),
    };
  }
  return libs;
}

/** A template variable the data does not give (strict mode): a clear error at send or preview time. */
export class TemplateRenderError extends Error {
  constructor(
    readonly part: 'subject' | 'html' | 'text',
    message: string,
  ) {
    super(`${part}: ${message}`);
  }
}

/** Compiled templates by source, so a bulk send compiles each part once. */
const compiled = new Map<string, HandlebarsTemplateDelegate>();

function compile(source: string, noEscape: boolean): HandlebarsTemplateDelegate {
  const key = `${noEscape ? 1 : 0}${source}`;
  let fn = compiled.get(key);
  if (!fn) {
    fn = mailLibs().hb.compile(source, { strict: true, noEscape, knownHelpersOnly: true, knownHelpers: { if: true, unless: true, each: true, with: true } });
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

function sanitizeOptions(defaultTags: readonly string[]): sanitizeHtmlLib.IOptions {
  return {
    allowedTags: [
      ...defaultTags,
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
}

/** Customer HTML made safe for mail: no scripts, no event attributes, only allow-listed URL schemes. */
export function sanitize(html: string): string {
  const mail = mailLibs();
  return mail.sanitizeHtml(html, mail.sanitizeOptions);
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
  let text: string | undefined;
  const prepared = parts.html && data ? prepare(parts.html) : null;
  if (prepared) {
    // Sanitised, inlined and converted once per template; data comes in HTML-escaped, in text only.
    html = run('html', prepared.html, data!);
    text = parts.text ? sub('text', parts.text) : prepared.text !== null ? run('text', prepared.text, data!) : toText(html);
    return { subject, html, text };
  }
  if (parts.html) html = finish(sanitize(sub('html', parts.html)));
  text = parts.text ? sub('text', parts.text) : html ? toText(html) : undefined;
  return { subject, html, text };
}

const finish = (safe: string) => (/<style[\s>]/i.test(safe) ? mailLibs().juice(safe) : safe);
const KEEP_CASE = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, format: 'heading', options: { uppercase: false } }));
const toText = (html: string, wordwrap: number | false = 78) => mailLibs().convert(html, { wordwrap, selectors: [{ selector: 'img', format: 'skip' }, ...KEEP_CASE] });

/**
 * A template whose variables can only land in text (escaped by Handlebars): sanitised, CSS-inlined and converted to
 * text once, then only substituted per message. Variables inside attributes (a link built from data could carry a
 * javascript: URL) or raw {{{triple}}} / {{& }} output are not safe that way: null, and such templates are sanitised
 * after substitution for every message.
 */
const preparedCache = new Map<string, { html: string; text: string | null } | null>();
function prepare(source: string): { html: string; text: string | null } | null {
  if (preparedCache.has(source)) return preparedCache.get(source)!;
  const unsafe = /\{\{\{|\{\{&|\{\{~?\{|=\s*["'][^"']*\{\{|<[^>]*\{\{/.test(source);
  const out = unsafe ? null : (() => {
    const html = finish(sanitize(source));
    // The text template keeps the variables as they are (no wrapping inside them); if conversion broke one, the
    // text is generated per message instead.
    let text: string | null = toText(html, false);
    try {
      mailLibs().hb.parse(text);
    } catch {
      text = null;
    }
    return { html, text };
  })();
  if (preparedCache.size > 500) preparedCache.clear();
  preparedCache.set(source, out);
  return out;
}

/** Throws TemplateRenderError when a part is not valid Handlebars (checked when a template is stored). */
export function checkSyntax(parts: { subject?: string | null; html?: string | null; text?: string | null }): void {
  for (const part of ['subject', 'html', 'text'] as const) {
    const s = parts[part];
    if (!s) continue;
    try {
      mailLibs().hb.parse(s);
    } catch (err) {
      throw new TemplateRenderError(part, (err as Error).message.split('\n')[0]);
    }
  }
}
