import type { Logger } from 'pino';
import type { NewEvent } from '../../events/event-outbox.js';
import type { Db, Queryable } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { MenuEngine, type AppReply, type HopContext, type MenuStep } from './menu-engine.js';
import type { AppDialect, MenuTree } from './menu-tree.js';
import { BACK_KEY, MAX_SCREEN_CHARS, MORE_KEY, paginate, screenLength } from './paging.js';
import { canonicalCode, displayCode, prefilledInputs } from './service-code.js';
import type { LiveSessions } from './live-sessions.js';
import { ReservedCodes, type ReservedCodeHandler } from './reserved-codes.js';
import { SessionStore, type EndStatus, type SessionApp, type SessionRow, type SessionState, type TranscriptEntry, type UssdChannel } from './session-store.js';
import type { UssdMetrics } from './ussd-metrics.js';
import { AppError } from './webhook-app.js';
import type { UssdStore } from './ussd-store.js';
import './ussd-events.js';

/** What goes back to the phone: a screen, and whether the session ends with it. */
export interface Answer {
  text: string;
  end: boolean;
  /** Null when no session was made (an unknown code, or a reserved code's one-screen answer). */
  sessionId: string | null;
  /** A reserved code's handler answered (no session, no account's app); the account it answered for, if one. */
  reserved?: { accountId?: string };
}

export interface BeginRequest {
  channel: UssdChannel;
  /** The network's handle of the dialogue; a later hop names it. */
  networkKey: string;
  phone: string;
  networkCode?: string;
  /** As dialled: '*384*12*3#' (or '*384*12#' plus pre-filled inputs). */
  dialled: string;
  /** Inputs that came with the first hop beside the code (an aggregator's text). */
  inputs?: string[];
  /** Routes only among this account's codes (aggregator callbacks, simulate). */
  accountId?: string;
}

export interface UssdCoreOptions {
  db: Db;
  store: UssdStore;
  sessions: SessionStore;
  /** Where live sessions are between hops (Redis, or the SQL row). */
  live: LiveSessions;
  /** Asks a customer's app (the webhook app client). */
  ask(accountId: string, url: string, dialect: AppDialect, hop: HopContext): Promise<AppReply>;
  /** Writes events in the caller's transaction; `wake` tells delivery after commit. */
  events: { insertMany(q: Queryable, events: readonly NewEvent[]): Promise<number>; wake(): void };
  clock: () => number;
  apology: string;
  unknownCodeText: string;
  /** A live session idle this long is ended Incomplete (the network has given up on it). */
  sessionTimeoutMs: number;
  /** A phone dialling again within this of a dropped session continues it; 0: never. */
  resumeWindowMs: number;
  log: Logger;
  metrics?: UssdMetrics;
}

const MAX_WRITE_TRIES = 3;
/** A session this long is ended (Failed, TOO_MANY_HOPS): its row and transcript stay bounded. */
export const MAX_HOPS = 200;
const MAX_PREFILLED = 20;

/** An END screen cannot page: cut at 182 characters. */
function endScreen(text: string): string {
  if (screenLength(text) <= MAX_SCREEN_CHARS) return text;
  let cut = MAX_SCREEN_CHARS;
  while (cut > 0 && screenLength(text.slice(0, cut)) > MAX_SCREEN_CHARS) cut--;
  return text.slice(0, cut);
}

/**
 * The one USSD session core. Dialects (SMPP binds, Africa's Talking, Hubtel, simulate) turn their traffic into
 * begin / input / networkEnd and their answers back; the core routes the code, runs the app (hosted menu or webhook),
 * pages long screens, keeps the transcript and writes the events. Hops of one session are serialised in the process
 * (a chain per network key) and across instances (each hop writes only over the version it read).
 */
export class UssdCore {
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly trees = new Map<string, MenuTree>();
  /** Codes the platform answers itself (the OTP fallback), before any claim, on every ingress. */
  readonly reserved = new ReservedCodes();

  constructor(private readonly o: UssdCoreOptions) {}

  /** A new dialogue: the first screen. */
  begin(req: BeginRequest): Promise<Answer> {
    return this.serial(req.networkKey, () => this.doBegin(req));
  }

  /** The phone's answer in a live dialogue; null when there is none (ended, timed out, unknown). */
  input(networkKey: string, input: string): Promise<Answer | null> {
    // An input longer than a screen is no USSD input: cut it, so a transcript entry stays screen-sized.
    const cut = input.length > MAX_SCREEN_CHARS ? input.slice(0, MAX_SCREEN_CHARS) : input;
    return this.serial(networkKey, () => this.doInput(networkKey, cut));
  }

  /** The network ended the dialogue (release, timeout, the phone hung up): Incomplete unless it had ended. */
  networkEnd(networkKey: string, status: EndStatus = 'Incomplete', error: string | null = null): Promise<void> {
    return this.serial(networkKey, async () => {
      const s = await this.o.live.get(networkKey);
      if (s) await this.finish(s, status, error, [], s.state);
    });
  }

  /** Ends live sessions idle past the timeout (any instance may; each row ends once). Returns how many ended. */
  async sweep(limit = 500): Promise<number> {
    const cutoff = this.o.clock() - this.o.sessionTimeoutMs;
    const idle = await this.o.sessions.idle(cutoff, limit);
    let n = 0;
    for (const row of idle) {
      const ended = await this.serial(row.networkKey, async () => {
        // The SQL row's time is its last write; the live copy knows the last hop.
        const s = await this.o.live.get(row.networkKey);
        if (!s || s.id !== row.id || s.updatedAt >= cutoff) return false;
        return this.finish(s, 'Incomplete', 'NETWORK_TIMEOUT', [], s.state);
      });
      if (ended) n++;
    }
    return n;
  }

  /** Runs fn after the previous work on the same key (hops of one dialogue one at a time). */
  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.chains.set(key, tail);
    void tail.then(() => {
      if (this.chains.get(key) === tail) this.chains.delete(key);
    });
    return next;
  }

  private async treeOf(app: Extract<SessionApp, { kind: 'menu' }>): Promise<MenuTree> {
    const k = `${app.menuId}@${app.version}`;
    let t = this.trees.get(k);
    if (!t) {
      // A version never changes once written: cache it (bounded).
      t = (await this.o.store.tree(app.menuId, app.version)) ?? undefined;
      if (!t) throw new AppError('APP_MALFORMED', `menu ${app.menuId} version ${app.version} is missing`);
      if (this.trees.size > 1000) this.trees.clear();
      this.trees.set(k, t);
    }
    return t;
  }

  private hopOf(s: SessionRow, inputs: string[]): HopContext {
    return { sessionId: s.id, serviceCode: displayCode(s.serviceCode), phone: s.phone, networkCode: s.networkCode, inputs };
  }

  private async doBegin(req: BeginRequest): Promise<Answer> {
    const started = performance.now();
    const canonical = canonicalCode(req.dialled);
    const reserved = canonical ? this.reserved.match(canonical) : null;
    if (reserved) return this.answerReserved(req, canonical!, reserved, started);
    // A new dialogue on a key that still has a live one: the network dropped that one (looked up beside the route).
    const [claim, stale] = canonical ? await Promise.all([this.o.store.route(canonical, req.accountId), this.o.live.get(req.networkKey)]) : [null, null];
    if (stale) await this.finish(stale, 'Incomplete', 'REPLACED', [], stale.state);
    if (!canonical || !claim) {
      this.o.metrics?.hop(req.channel, 'unknown_code', started);
      return { text: this.o.unknownCodeText, end: true, sessionId: null };
    }

    const now = this.o.clock();
    // Pre-filled inputs are bounded like typed ones: a few, each screen-sized.
    const inputs = [...prefilledInputs(canonical, claim.code), ...(req.inputs ?? [])].slice(0, MAX_PREFILLED).map((i) => i.slice(0, MAX_SCREEN_CHARS));
    let app: SessionApp;
    if (claim.menuId) app = { kind: 'menu', menuId: claim.menuId, version: claim.publishedVersion ?? 0 };
    else app = { kind: 'webhook', url: claim.webhookUrl ?? '', dialect: claim.dialect };
    const s: SessionRow = {
      id: newId('ussd_', now),
      accountId: claim.accountId,
      serviceCodeId: claim.id,
      serviceCode: claim.code,
      dialled: displayCode(canonical),
      phone: req.phone,
      networkCode: req.networkCode ?? '',
      channel: req.channel,
      networkKey: req.networkKey,
      status: 'active',
      endStatus: null,
      error: null,
      app,
      state: { pages: [], page: 0, inputs: [] },
      transcript: [{ at: now, dir: 'in', text: displayCode(canonical) }],
      hops: 1,
      lastInput: inputs.length ? inputs[inputs.length - 1] : null,
      resumedFrom: null,
      version: 0,
      startedAt: now,
      updatedAt: now,
      endedAt: null,
    };
    const resumed = this.o.resumeWindowMs > 0 && !inputs.length ? await this.o.sessions.resumable(req.phone, claim.id, now - this.o.resumeWindowMs) : null;
    let step: { text: string; end: boolean; state: SessionState; error?: string };
    if (resumed && resumed.state.pages.length) {
      // Continue where the dropped session was: its app (and menu version), its inputs, its screen.
      s.app = resumed.app;
      s.resumedFrom = resumed.id;
      step = { text: resumed.state.pages[resumed.state.page], end: false, state: { ...resumed.state } };
    } else if (app.kind === 'menu' && !app.version) {
      step = { text: this.o.apology, end: true, state: s.state, error: 'MENU_NOT_PUBLISHED' };
    } else {
      step = await this.run(s, async () => {
        if (s.app.kind === 'menu') {
          const engine = new MenuEngine(await this.treeOf(s.app), (url, dialect, hop) => this.o.ask(s.accountId, url, dialect, hop));
          let m: MenuStep = await engine.start(this.hopOf(s, []));
          const done: string[] = [];
          for (const input of inputs) {
            if (m.end) break;
            done.push(input);
            m = await engine.input(m.position, input, this.hopOf(s, done));
          }
          return { text: m.text, end: m.end, position: m.position, inputs };
        }
        const r = await this.o.ask(s.accountId, s.app.url, s.app.dialect, this.hopOf(s, inputs));
        return { text: r.text, end: r.end, inputs };
      });
    }
    // A resumed screen keeps its pages (and the page it was on); any other is paged now.
    const out = s.resumedFrom ? { text: step.text, end: false, state: step.state } : this.screenOf(step);
    s.transcript.push({ at: this.o.clock(), dir: 'out', text: out.text });
    s.state = out.state;
    const events: NewEvent[] = [this.event(s, 'ussd.session.started', { resumedFrom: s.resumedFrom })];
    if (out.end) this.close(s, step.error ? 'Failed' : 'Success', step.error ?? null, events);
    try {
      await this.o.db.tx(async (q) => {
        await this.o.sessions.insert(q, s);
        await this.o.events.insertMany(q, events);
      });
    } catch (err) {
      // Another instance began the same dialogue first (the network repeated its first hop): answer with its screen.
      if ((err as { code?: string }).code !== '23505') throw err;
      const live = await this.o.live.get(req.networkKey);
      if (!live) throw err;
      return { text: live.state.pages[live.state.page] ?? '', end: false, sessionId: live.id };
    }
    this.o.events.wake();
    this.o.metrics?.started(s.channel);
    if (out.end) this.o.metrics?.ended(s.endStatus!);
    this.o.metrics?.hop(s.channel, step.error ? 'failed' : 'ok', started);
    return { text: out.text, end: out.end, sessionId: s.id };
  }

  /** A reserved code: its handler's one screen ends the dialogue; no session row (no account's app ran). */
  private async answerReserved(req: BeginRequest, dialled: string, handler: ReservedCodeHandler, started: number): Promise<Answer> {
    const stale = await this.o.live.get(req.networkKey);
    if (stale) await this.finish(stale, 'Incomplete', 'REPLACED', [], stale.state);
    let r: { text: string; accountId?: string };
    try {
      r = await handler.answer({ channel: req.channel, phone: req.phone, dialled, accountId: req.accountId });
    } catch (err) {
      this.o.log.warn({ handler: handler.name, channel: req.channel, err: (err as Error).message }, 'USSD reserved code handler failed; the apology is shown');
      this.o.metrics?.hop(req.channel, 'failed', started);
      return { text: this.o.apology, end: true, sessionId: null, reserved: {} };
    }
    this.o.metrics?.hop(req.channel, 'reserved', started);
    return { text: endScreen(r.text), end: true, sessionId: null, reserved: { accountId: r.accountId } };
  }

  private async doInput(networkKey: string, input: string): Promise<Answer | null> {
    const started = performance.now();
    for (let attempt = 1; ; attempt++) {
      const s = await this.o.live.get(networkKey);
      if (!s) return null;
      const now = this.o.clock();
      const append: TranscriptEntry[] = [{ at: now, dir: 'in', text: input }];
      const st = s.state;
      let step: { text: string; end: boolean; state: SessionState; error?: string };
      let turned = true;
      if (s.hops + 1 >= MAX_HOPS) {
        turned = false;
        s.lastInput = input;
        step = { text: this.o.apology, end: true, state: st, error: 'TOO_MANY_HOPS' };
      } else if (st.pages.length > 1 && input === MORE_KEY && st.page < st.pages.length - 1) {
        step = { text: st.pages[st.page + 1], end: false, state: { ...st, page: st.page + 1 } };
      } else if (st.pages.length > 1 && input === BACK_KEY && st.page > 0) {
        step = { text: st.pages[st.page - 1], end: false, state: { ...st, page: st.page - 1 } };
      } else {
        turned = false;
        const inputs = [...st.inputs, input];
        s.lastInput = input;
        step = await this.run(s, async () => {
          if (s.app.kind === 'menu') {
            const engine = new MenuEngine(await this.treeOf(s.app), (url, dialect, hop) => this.o.ask(s.accountId, url, dialect, hop));
            const m = await engine.input(st.position!, input, this.hopOf(s, inputs));
            return { text: m.text, end: m.end, position: m.position, inputs };
          }
          const r = await this.o.ask(s.accountId, s.app.url, s.app.dialect, this.hopOf(s, inputs));
          return { text: r.text, end: r.end, inputs };
        });
      }
      const out = turned ? { text: step.text, end: false, state: step.state } : this.screenOf(step);
      append.push({ at: this.o.clock(), dir: 'out', text: out.text });
      s.hops++;
      s.updatedAt = this.o.clock();
      s.state = out.state;
      let written: boolean;
      if (out.end) written = await this.finish(s, step.error ? 'Failed' : 'Success', step.error ?? null, append, out.state);
      else written = await this.o.live.save(s, append);
      if (written) {
        this.o.metrics?.hop(s.channel, step.error ? 'failed' : 'ok', started);
        return { text: out.text, end: out.end, sessionId: s.id };
      }
      // Another instance took a hop of this dialogue in between (or ended it): read again.
      if (attempt >= MAX_WRITE_TRIES) return null;
    }
  }

  /** Runs the app for a hop; an app that fails ends the session with the apology. */
  private async run(
    s: SessionRow,
    fn: () => Promise<{ text: string; end: boolean; position?: SessionState['position']; inputs: string[] }>,
  ): Promise<{ text: string; end: boolean; state: SessionState; error?: string }> {
    try {
      const r = await fn();
      return { text: r.text, end: r.end, state: { position: r.position, pages: [], page: 0, inputs: r.inputs } };
    } catch (err) {
      const code = err instanceof AppError ? err.code : 'INTERNAL_ERROR';
      this.o.log.warn({ session: s.id, account: s.accountId, code, err: (err as Error).message }, 'USSD app failed; the session ends with the apology');
      return { text: this.o.apology, end: true, state: s.state, error: code };
    }
  }

  /** Pages a continuing screen; an ending one is cut to one screen. */
  private screenOf(step: { text: string; end: boolean; state: SessionState }): { text: string; end: boolean; state: SessionState } {
    if (step.end) return { text: endScreen(step.text), end: true, state: { ...step.state, pages: [endScreen(step.text)], page: 0 } };
    const pages = paginate(step.text);
    return { text: pages[0], end: false, state: { ...step.state, pages, page: 0 } };
  }

  private event(s: SessionRow, type: 'ussd.session.started' | 'ussd.session.ended', extra: Record<string, unknown>): NewEvent {
    return {
      accountId: s.accountId,
      type,
      messageKey: s.id,
      data: { id: s.id, sessionId: s.id, serviceCode: displayCode(s.serviceCode), dialled: s.dialled, phoneNumber: s.phone, networkCode: s.networkCode, channel: s.channel, ...extra },
    };
  }

  private close(s: SessionRow, status: EndStatus, error: string | null, events: NewEvent[]): void {
    const now = this.o.clock();
    s.status = 'ended';
    s.endStatus = status;
    s.error = error;
    s.endedAt = now;
    s.updatedAt = now;
    events.push(
      this.event(s, 'ussd.session.ended', { status, durationInMillis: now - s.startedAt, hopsCount: s.hops, input: s.lastInput, errorMessage: error }),
    );
  }

  /**
   * Ends a live session with its event, in one transaction: the SQL row gets its final state and the part of the
   * transcript it did not hold yet; false when it was no longer live at the version read.
   */
  private async finish(s: SessionRow, status: EndStatus, error: string | null, append: TranscriptEntry[], state: SessionState): Promise<boolean> {
    if (!(await this.o.live.claim(s))) return false;
    const events: NewEvent[] = [];
    s.state = state;
    this.close(s, status, error, events);
    const unsaved = [...s.transcript.slice(s.persisted ?? s.transcript.length), ...append];
    const ok = await this.o.db.tx(async (q) => {
      if (!(await this.o.sessions.update(q, s, unsaved, s.version))) return false;
      await this.o.events.insertMany(q, events);
      return true;
    });
    if (ok) {
      await this.o.live.forget(s).catch((err: Error) => this.o.log.warn({ session: s.id, err: err.message }, 'USSD live copy not dropped; it expires'));
      this.o.events.wake();
      this.o.metrics?.ended(status);
    }
    return ok;
  }
}
