import { MAX_SCREEN_CHARS } from './paging.js';
import { compilePattern, menuScreen, type AppDialect, type MenuNode, type MenuTree } from './menu-tree.js';

/** What an app answered: `CON text` (continue) or `END text`. */
export interface AppReply {
  end: boolean;
  text: string;
}

/** One hop as an app sees it. */
export interface HopContext {
  sessionId: string;
  serviceCode: string;
  phone: string;
  networkCode: string;
  /** Every input of the session so far, this hop's last (empty on the first hop unless the code pre-filled some). */
  inputs: readonly string[];
}

/** Asks a customer's app for a screen (webhook-app.ts). */
export type AskApp = (url: string, dialect: AppDialect, hop: HopContext) => Promise<AppReply>;

/** Where a session is in a tree: the node and the values input nodes kept. */
export interface MenuPosition {
  node: string;
  vars: Record<string, string>;
}

export interface MenuStep {
  text: string;
  end: boolean;
  position: MenuPosition;
}

const DEFAULT_INVALID = 'Invalid choice';

/** `{name}` in a text becomes the session's value of that name (unknown names stay as written). */
function fill(text: string, vars: Record<string, string>): string {
  return text.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (all, name: string) => (name in vars ? vars[name] : all));
}

/**
 * Walks a hosted menu tree, one input at a time: pure apart from dynamic nodes, which ask the customer's app. The
 * caller (the session core) keeps the position between hops and pages long screens.
 */
export class MenuEngine {
  constructor(
    private readonly tree: MenuTree,
    private readonly ask: AskApp,
  ) {}

  /** The first screen. */
  start(hop: HopContext, vars: Record<string, string> = {}): Promise<MenuStep> {
    return this.enter(this.tree.start, vars, hop);
  }

  /** The screen of a position again (a resumed session). */
  async show(position: MenuPosition, hop: HopContext): Promise<MenuStep> {
    return this.enter(position.node, position.vars, hop);
  }

  /** The screen after `input` at `position`. */
  async input(position: MenuPosition, input: string, hop: HopContext): Promise<MenuStep> {
    const node = this.node(position.node);
    const vars = position.vars;
    switch (node.type) {
      case 'menu': {
        const option = node.options.find((o) => o.key === input);
        if (!option) return { text: `${this.tree.invalidText ?? DEFAULT_INVALID}\n${fill(menuScreen(node), vars)}`, end: false, position };
        return this.enter(option.next, vars, hop);
      }
      case 'input': {
        const re = node.pattern !== undefined ? compilePattern(node.pattern) : null;
        // Patterns run on inputs of a USSD screen's size only.
        if (re && (input.length > MAX_SCREEN_CHARS || !re.test(input))) {
          return { text: `${node.error ?? 'Invalid input'}\n${fill(node.text, vars)}`, end: false, position };
        }
        return this.enter(node.next, node.var ? { ...vars, [node.var]: input } : vars, hop);
      }
      case 'dynamic': {
        const kept = node.var ? { ...vars, [node.var]: input } : vars;
        if (node.next) return this.enter(node.next, kept, hop);
        return this.askNode(position.node, node, kept, hop);
      }
      case 'end':
        // An ended session takes no input; the core never gets here.
        return { text: fill(node.text, vars), end: true, position };
    }
  }

  private node(id: string): MenuNode {
    const n = this.tree.nodes[id];
    if (!n) throw new Error(`menu node ${id} is missing`);
    return n;
  }

  private async enter(id: string, vars: Record<string, string>, hop: HopContext): Promise<MenuStep> {
    const node = this.node(id);
    const position = { node: id, vars };
    switch (node.type) {
      case 'menu':
        return { text: fill(menuScreen(node), vars), end: false, position };
      case 'input':
        return { text: fill(node.text, vars), end: false, position };
      case 'end':
        return { text: fill(node.text, vars), end: true, position };
      case 'dynamic':
        return this.askNode(id, node, vars, hop);
    }
  }

  private async askNode(id: string, node: Extract<MenuNode, { type: 'dynamic' }>, vars: Record<string, string>, hop: HopContext): Promise<MenuStep> {
    const reply = await this.ask(node.url, node.dialect ?? 'africastalking', hop);
    return { text: reply.text, end: reply.end, position: { node: id, vars } };
  }
}
