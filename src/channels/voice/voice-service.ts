import type { AccountService } from '../../accounts/account-service.js';
import { fromMicros } from '../../accounts/money.js';
import type { ModuleHolds } from '../../billing/balance-holds.js';
import { ApiError } from '../../http/errors.js';
import { normalizeNumber } from '../../numbers/phone.js';
import type { TargetGuard } from '../../security/target-guard.js';
import type { Db } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import type { Call } from './call.js';
import { affordableSeconds, billableSeconds, costMicros, type VoicePrices } from './call-pricing.js';
import type { CallRecorder } from './call-recorder.js';
import { scriptOf, urlsOf, type CallStep } from './call-script.js';
import { isFinal, type CallStatus } from './call-status.js';
import type { CallStore } from './call-store.js';
import type { VoiceConfig } from './config.js';

export interface PlaceCallInput {
  to: string;
  from: string;
  say?: { text: string; locale?: string; voice?: string };
  play?: { url: string };
  script?: CallStep[];
  statusCallback?: string;
  statusCallbackEvents?: Array<'initiated' | 'ringing' | 'answered' | 'completed'>;
  timeoutSeconds?: number;
  timeLimit?: number;
  machineDetection?: 'off' | 'detect';
  reference?: string;
  /** An AI voice agent talks on the call instead of a script (its current version, fixed now). */
  agentId?: string;
  /** Values for the agent's {{placeholders}}, over its own defaults. */
  variables?: Record<string, string>;
}

const invalid = (field: string, message: string) => new ApiError('VALIDATION_ERROR', { data: { errors: [{ field, message }] } });

/**
 * The API side of calls: placing one (checked, its credit held, stored `queued` in one transaction, then the dialer
 * woken), reading, listing and hanging up. Dialling is the owner's (dialer.ts), on an instance running the media role.
 */
export class VoiceService {
  constructor(
    private readonly o: {
      db: Db;
      store: CallStore;
      recorder: CallRecorder;
      holds: ModuleHolds;
      accounts: AccountService;
      prices: VoicePrices;
      guard: TargetGuard;
      config: VoiceConfig;
      /** Checks a say step's locale or voice can be spoken (throws VOICE_NOT_AVAILABLE). */
      checkVoice: (say: { locale?: string; voice?: string }) => Promise<void>;
      /** Tells the dialers a call is due (another instance may run the media role). */
      wakeDialer: () => void;
      /** Tells the call's owner to hang up now (it also sees the flag when it renews its claim). */
      notifyHangup: (callId: string) => void;
      /** The current version of the account's agent (throws VOICE_AGENT_NOT_FOUND). */
      agentVersion: (accountId: string, agentId: string) => Promise<number>;
    },
  ) {}

  /**
   * `browser`: a call from the dialer page, with no script (the person talks): held for `claimMs` for the instance
   * placing it, which dials it itself (the browser's connection is there); no dialer is woken for it.
   */
  async place(accountId: string, input: PlaceCallInput, o: { browser?: { claimMs: number } } = {}): Promise<Call> {
    return this.insertCall(accountId, input, { direction: 'outbound', claimMs: o.browser?.claimMs });
  }

  /**
   * A call coming in to one of the account's numbers that an agent answers: stored held for `claimMs` for the
   * instance answering it, its credit held at voice.prices.inboundPerMinute (free by default). Throws as place() does
   * (INSUFFICIENT_CREDIT when the balance does not cover the first increment, VOICE_AGENT_NOT_FOUND).
   */
  receive(accountId: string, input: { to: string; from: string } & ({ agentId: string } | { dialerIdentity: string }), claimMs: number): Promise<Call> {
    const answeredBy = 'agentId' in input ? { agentId: input.agentId } : { reference: `dialer:${input.dialerIdentity}` };
    return this.insertCall(accountId, { to: input.to, from: input.from, ...answeredBy }, { direction: 'inbound', claimMs });
  }

  /**
   * Checks, holds credit for and stores a call. `claimMs`: held for the instance storing it, which connects it itself
   * (a browser's call, a call coming in); such a call has no script.
   */
  private async insertCall(accountId: string, input: PlaceCallInput, o: { direction: 'outbound' | 'inbound'; claimMs?: number }): Promise<Call> {
    const c = this.o.config;
    const inbound = o.direction === 'inbound';
    const to = normalizeNumber(input.to, { international: true });
    if (!to) throw invalid('to', 'an E.164 number (+ and country code)');
    // An inbound caller's number is what the network says (it may be withheld or a short code).
    const from = inbound ? input.from.replace(/\D/g, '') || '0' : normalizeNumber(input.from, { international: true });
    if (!from) throw invalid('from', 'an E.164 number (+ and country code)');
    const owned = await this.o.accounts.numbers(accountId);
    if (!owned.includes(inbound ? to : from)) throw new ApiError('CALLER_ID_NOT_ALLOWED', { data: { from: '+' + from } });
    let agent: { id: string; version: number; variables: Record<string, string> } | undefined;
    if (input.agentId !== undefined) {
      if (input.say || input.play || input.script) throw invalid('agentId', 'an agent talks on the call: give no say, play or script with it');
      agent = { id: input.agentId, version: await this.o.agentVersion(accountId, input.agentId), variables: input.variables ?? {} };
    } else if (input.variables) throw invalid('variables', 'variables go with an agentId');
    const script = agent || o.claimMs ? { steps: [] as CallStep[] } : scriptOf(input);
    if ('error' in script) throw invalid(script.field, script.error);
    for (const url of urlsOf(script.steps)) {
      const checked = await this.o.guard.check(url);
      if (!checked.ok) throw invalid('play.url', `${url}: ${checked.reason}`);
    }
    for (const step of script.steps) {
      if ('say' in step) await this.o.checkVoice(step.say);
      if ('gather' in step && step.gather.prompt?.say) await this.o.checkVoice(step.gather.prompt.say);
    }
    if (input.statusCallback) {
      const checked = await this.o.guard.check(input.statusCallback);
      if (!checked.ok) throw invalid('statusCallback', checked.reason);
    }
    const timeLimit = Math.min(input.timeLimit ?? c.maxDurationSeconds, c.maxDurationSeconds);
    const perMinute = inbound ? this.o.prices.inboundPerMinuteMicros : this.o.prices.perMinuteMicros(to);
    const id = newId('call_');
    return this.o.db.tx(async (q) => {
      // The credit for its longest duration, or what the balance affords (the call is cut there, and says so).
      let heldSeconds = timeLimit;
      let held = await this.o.holds.hold(q, { accountId, reference: id, micros: costMicros(perMinute, billableSeconds(timeLimit, this.o.prices.increment)) });
      if (!held.ok) {
        heldSeconds = affordableSeconds(perMinute, held.availableMicros, timeLimit, this.o.prices.increment);
        if (heldSeconds > 0) held = await this.o.holds.hold(q, { accountId, reference: id, micros: costMicros(perMinute, billableSeconds(heldSeconds, this.o.prices.increment)) });
        if (!held.ok || heldSeconds <= 0) {
          throw new ApiError('INSUFFICIENT_CREDIT', {
            message: `A call to +${to} costs ${fromMicros(perMinute)} a minute, billed at least ${this.o.prices.increment.minimumSeconds} s; the balance does not cover it`,
            data: { pricePerMinute: fromMicros(perMinute), minimumSeconds: this.o.prices.increment.minimumSeconds },
          });
        }
      }
      const call = await this.o.store.insert(q, {
        id,
        accountId,
        to,
        from,
        steps: script.steps,
        statusCallback: input.statusCallback ?? null,
        statusCallbackEvents: input.statusCallbackEvents ?? ['completed'],
        ringTimeoutSeconds: input.timeoutSeconds ?? c.ringTimeoutSeconds,
        timeLimitSeconds: timeLimit,
        machineDetection: input.machineDetection ?? 'off',
        reference: input.reference ?? null,
        pricePerMinuteMicros: perMinute,
        heldSeconds,
        ...(agent ? { agent } : {}),
        ...(o.claimMs ? { claimMs: o.claimMs } : {}),
        direction: o.direction,
      });
      return call;
    }).then((call) => {
      if (!o.claimMs) this.o.wakeDialer();
      return call;
    });
  }

  async get(accountId: string, id: string): Promise<Call> {
    const call = await this.o.store.get(id, accountId);
    if (!call) throw new ApiError('CALL_NOT_FOUND');
    return call;
  }

  list(accountId: string, f: Parameters<CallStore['list']>[1], limit: number): Promise<Call[]> {
    return this.o.store.list(accountId, f, limit);
  }

  history(id: string) {
    return this.o.store.history(id);
  }

  /**
   * Hangs up: a call not yet dialled is canceled here; a live one is marked and its owner told (it sends CANCEL while
   * ringing, BYE once answered); an ended one is CALL_ALREADY_ENDED.
   */
  async hangup(accountId: string, id: string): Promise<Call> {
    const call = await this.get(accountId, id);
    if (isFinal(call.status)) throw new ApiError('CALL_ALREADY_ENDED', { data: { status: call.status } });
    if (call.status === 'queued') {
      const canceled = await this.o.recorder.apply(id, { status: 'canceled', detail: { by: 'api', before: 'dialling' } });
      if (canceled) return canceled;
    }
    const marked = await this.o.db.tx(async (q) => {
      const locked = await this.o.store.lock(q, id);
      if (!locked || isFinal(locked.status as CallStatus)) return locked;
      await this.o.store.requestHangup(q, id);
      return { ...locked, hangupRequested: true };
    });
    if (marked && !isFinal(marked.status)) this.o.notifyHangup(id);
    if (marked && isFinal(marked.status)) throw new ApiError('CALL_ALREADY_ENDED', { data: { status: marked.status } });
    return marked!;
  }
}
