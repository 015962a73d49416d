import { isGsm7 } from '../../smpp/text/gsm7.js';
import type { FieldError } from '../../http/errors.js';
import { BACK_KEY, MAX_SCREEN_CHARS, MORE_KEY, paginate, screenLength } from './paging.js';

export interface MenuOption {
  key: string;
  label: string;
  next: string;
}

/** Shows text and options; the input picks an option by key. */
export interface MenuNodeMenu {
  type: 'menu';
  text: string;
  options: MenuOption[];
}

/** Asks for free text; `pattern` (a regular expression matched against the whole input) validates it; kept as `var`. */
export interface MenuNodeInput {
  type: 'input';
  text: string;
  pattern?: string;
  /** Shown above the prompt again when the input does not match. */
  error?: string;
  var?: string;
  next: string;
}

/** Shows its text and ends the session. */
export interface MenuNodeEnd {
  type: 'end';
  text: string;
}

/**
 * Asks the customer's webhook for its screen (the Africa's Talking or JSON dialect, signed). A `CON` answer shows
 * that text and the next input goes to `next` (kept as `var`), or, without `next`, to the webhook again; `END` ends.
 */
export interface MenuNodeDynamic {
  type: 'dynamic';
  url: string;
  dialect?: AppDialect;
  next?: string;
  var?: string;
}

export type MenuNode = MenuNodeMenu | MenuNodeInput | MenuNodeEnd | MenuNodeDynamic;

export interface MenuTree {
  start: string;
  nodes: Record<string, MenuNode>;
  /** Shown above a menu again after an unknown choice (default "Invalid choice"). */
  invalidText?: string;
}

/** How Ferry talks to a customer's app: Africa's Talking form fields, or JSON. */
export type AppDialect = 'africastalking' | 'json';
export const APP_DIALECTS: readonly AppDialect[] = ['africastalking', 'json'];

export const MENU_LIMITS = { maxNodes: 500, maxTextChars: 1000, maxOptions: 50, maxPatternChars: 200 } as const;
const KEY_RE = /^[0-9*#]{1,4}$/;
const NODE_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const VAR_RE = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;

/** The screen of a menu node before paging. */
export function menuScreen(node: MenuNodeMenu): string {
  return [node.text, ...node.options.map((o) => `${o.key}. ${o.label}`)].join('\n');
}

/** The targets a node leads to. */
function targets(node: MenuNode): string[] {
  switch (node.type) {
    case 'menu':
      return node.options.map((o) => o.next);
    case 'input':
      return [node.next];
    case 'dynamic':
      return node.next ? [node.next] : [];
    default:
      return [];
  }
}

/** Compiles an input pattern anchored to the whole input; null when it is not a valid regular expression. */
export function compilePattern(pattern: string): RegExp | null {
  try {
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch {
    return null;
  }
}

/**
 * Why a pattern could backtrack for ages on a short input (it runs on the daemon's thread): a quantified group
 * holding a quantifier or an alternation — (a+)+, (a|a)*, (\d*){2,} — or a backreference. Null when it is safe.
 * Stricter than needed (some harmless patterns are refused), never looser.
 */
export function unsafePattern(pattern: string): string | null {
  if (/\\[1-9]|\\k</.test(pattern)) return 'backreferences are not accepted';
  // Group bodies, innermost first; a group followed by a quantifier must hold no quantifier or alternation.
  const stack: number[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      i++;
      continue;
    }
    if (ch === '[') {
      // Skip a character class: quantifiers inside it are literal.
      for (i++; i < pattern.length && pattern[i] !== ']'; i++) if (pattern[i] === '\\') i++;
      continue;
    }
    if (ch === '(') stack.push(i);
    else if (ch === ')' && stack.length) {
      const start = stack.pop()!;
      const body = pattern.slice(start + 1, i).replace(/\\./g, '').replace(/\[[^\]]*\]/g, 'x');
      const quantified = /^[*+?{]/.test(pattern.slice(i + 1));
      if (quantified && /[*+?{|]/.test(body.replace(/^\?[:=!<]/, ''))) return 'a repeated group may not hold a repetition or an alternation (it could run for ages)';
    }
  }
  return null;
}

/**
 * Every problem of a tree, each naming its place (`tree.nodes.bal.next`): a missing start or target, a node no path
 * reaches, text outside GSM-7, options with duplicate or reserved keys, a bad pattern, an end screen over 182
 * characters (it cannot page: the session ends with it). Empty when the tree is good.
 */
export function validateTree(tree: MenuTree): FieldError[] {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field: `tree.${field}`, message });
  const ids = Object.keys(tree.nodes ?? {});
  if (!ids.length) err('nodes', 'must hold at least one node');
  if (ids.length > MENU_LIMITS.maxNodes) err('nodes', `at most ${MENU_LIMITS.maxNodes} nodes`);
  if (!(tree.start in (tree.nodes ?? {}))) err('start', `names no node (${tree.start})`);
  if (tree.invalidText !== undefined && !isGsm7(tree.invalidText)) err('invalidText', 'must be GSM-7 text');
  const text = (field: string, s: string) => {
    if (!isGsm7(s)) err(field, 'must be GSM-7 text (no characters outside the GSM 03.38 alphabet)');
    if (s.length > MENU_LIMITS.maxTextChars) err(field, `at most ${MENU_LIMITS.maxTextChars} characters`);
  };
  for (const id of ids) {
    const node = tree.nodes[id];
    const at = `nodes.${id}`;
    if (!NODE_ID_RE.test(id)) err(at, 'node ids are 1-64 letters, digits, _ . -');
    for (const t of targets(node)) if (!(t in tree.nodes)) err(`${at}.next`, `names no node (${t})`);
    if ('var' in node && node.var !== undefined && !VAR_RE.test(node.var)) err(`${at}.var`, 'a name of letters, digits and _');
    switch (node.type) {
      case 'menu': {
        text(`${at}.text`, node.text);
        if (!node.options.length) err(`${at}.options`, 'a menu needs at least one option');
        if (node.options.length > MENU_LIMITS.maxOptions) err(`${at}.options`, `at most ${MENU_LIMITS.maxOptions} options`);
        const seen = new Set<string>();
        node.options.forEach((o, i) => {
          if (!KEY_RE.test(o.key)) err(`${at}.options.${i}.key`, 'keys are 1-4 of 0-9 * #');
          if (seen.has(o.key)) err(`${at}.options.${i}.key`, `duplicate key ${o.key}`);
          seen.add(o.key);
          text(`${at}.options.${i}.label`, o.label);
        });
        if (paginate(menuScreen(node)).length > 1) {
          for (const reserved of [MORE_KEY, BACK_KEY]) {
            if (seen.has(reserved)) err(`${at}.options`, `this menu pages (over ${MAX_SCREEN_CHARS} characters): key ${reserved} is reserved for ${reserved === MORE_KEY ? 'More' : 'Back'}`);
          }
        }
        break;
      }
      case 'input':
        text(`${at}.text`, node.text);
        if (node.error !== undefined) text(`${at}.error`, node.error);
        if (node.pattern !== undefined) {
          if (node.pattern.length > MENU_LIMITS.maxPatternChars) err(`${at}.pattern`, `at most ${MENU_LIMITS.maxPatternChars} characters`);
          else if (!compilePattern(node.pattern)) err(`${at}.pattern`, 'not a valid regular expression');
          else {
            const unsafe = unsafePattern(node.pattern);
            if (unsafe) err(`${at}.pattern`, unsafe);
          }
        }
        break;
      case 'end':
        text(`${at}.text`, node.text);
        if (screenLength(node.text) > MAX_SCREEN_CHARS) err(`${at}.text`, `an end screen cannot page: at most ${MAX_SCREEN_CHARS} characters`);
        break;
      case 'dynamic':
        if (node.dialect !== undefined && !APP_DIALECTS.includes(node.dialect)) err(`${at}.dialect`, `one of ${APP_DIALECTS.join(', ')}`);
        break;
    }
  }
  // Reachability from start, only when the start exists (else every node would be reported).
  if (tree.start in (tree.nodes ?? {})) {
    const reached = new Set<string>([tree.start]);
    const todo = [tree.start];
    while (todo.length) {
      const n = tree.nodes[todo.pop()!];
      for (const t of targets(n)) {
        if (t in tree.nodes && !reached.has(t)) {
          reached.add(t);
          todo.push(t);
        }
      }
    }
    for (const id of ids) if (!reached.has(id)) err(`nodes.${id}`, 'unreachable: no path from start leads here');
  }
  return errors;
}

/** The dynamic nodes' URLs (each checked by the SSRF guard on upload and on every call). */
export function dynamicUrls(tree: MenuTree): string[] {
  return Object.values(tree.nodes).flatMap((n) => (n.type === 'dynamic' ? [n.url] : []));
}

/** The JSON schema of a tree (shape only; validateTree checks the rest). */
export const menuTreeSchema = {
  type: 'object',
  required: ['start', 'nodes'],
  additionalProperties: false,
  properties: {
    start: { type: 'string', minLength: 1, maxLength: 64, description: 'id of the first node' },
    invalidText: { type: 'string', maxLength: 100, description: 'shown above a menu after an unknown choice (default "Invalid choice")' },
    nodes: {
      type: 'object',
      description: 'node id → node; type menu (text, options [{key, label, next}]), input (text, pattern, error, var, next), end (text), dynamic (url, dialect, next, var)',
      additionalProperties: {
        type: 'object',
        required: ['type'],
        additionalProperties: false,
        properties: {
          type: { type: 'string', enum: ['menu', 'input', 'end', 'dynamic'] },
          text: { type: 'string', maxLength: MENU_LIMITS.maxTextChars },
          options: {
            type: 'array',
            maxItems: MENU_LIMITS.maxOptions,
            items: {
              type: 'object',
              required: ['key', 'label', 'next'],
              additionalProperties: false,
              properties: { key: { type: 'string' }, label: { type: 'string', maxLength: 182 }, next: { type: 'string' } },
            },
          },
          pattern: { type: 'string' },
          error: { type: 'string', maxLength: 182 },
          var: { type: 'string' },
          next: { type: 'string' },
          url: { type: 'string', maxLength: 2048 },
          dialect: { type: 'string', enum: [...APP_DIALECTS] },
        },
      },
    },
  },
} as const;

/** Node fields the schema leaves optional but a type needs: checked before validateTree. */
export function shapeErrors(tree: MenuTree): FieldError[] {
  const errors: FieldError[] = [];
  for (const [id, n] of Object.entries(tree.nodes ?? {})) {
    const need = (f: string) => {
      if ((n as unknown as Record<string, unknown>)[f] === undefined) errors.push({ field: `tree.nodes.${id}.${f}`, message: `a ${n.type} node needs ${f}` });
    };
    if (n.type === 'menu') ['text', 'options'].forEach(need);
    if (n.type === 'input') ['text', 'next'].forEach(need);
    if (n.type === 'end') need('text');
    if (n.type === 'dynamic') need('url');
  }
  return errors;
}
