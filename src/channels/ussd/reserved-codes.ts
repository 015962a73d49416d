import { canonicalCode, claimCandidates, codesOverlap } from './service-code.js';
import type { UssdChannel } from './session-store.js';

/** A dial of a reserved code, from any ingress. */
export interface ReservedDial {
  channel: UssdChannel;
  /** As the ingress gave it (the handler normalises it). */
  phone: string;
  /** Canonical, the reserved code or an extension of it. */
  dialled: string;
  /**
   * Set when the ingress names an account rather than the network authenticating the phone (an aggregator
   * connector, simulate): the handler answers only from that account's data.
   */
  accountId?: string;
}

/** A platform service behind a reserved code: one screen, the dialogue ends with it. */
export interface ReservedCodeHandler {
  /** Who answers (logs, docs): 'otp'. */
  readonly name: string;
  /** As dialled: '*889*142#'. */
  readonly serviceCode: string;
  answer(dial: ReservedDial): Promise<{ text: string; accountId?: string }>;
}

/**
 * Codes the platform answers itself, before any account's claim, on every ingress (SMPP, aggregators, simulate). A
 * reserved code and its extensions are the handler's; no account may claim them or a code they extend.
 */
export class ReservedCodes {
  private readonly handlers = new Map<string, ReservedCodeHandler>();

  register(handler: ReservedCodeHandler): void {
    const code = canonicalCode(handler.serviceCode);
    if (!code) throw new Error(`reserved USSD code ${handler.serviceCode} is not a service code`);
    for (const [other, h] of this.handlers) if (codesOverlap(code, other)) throw new Error(`reserved USSD code ${handler.serviceCode} overlaps ${h.serviceCode} (${h.name})`);
    this.handlers.set(code, handler);
  }

  /** The handler of a dialled code (canonical), if it is a reserved code or extends one. */
  match(dialled: string): ReservedCodeHandler | null {
    for (const c of claimCandidates(dialled)) {
      const h = this.handlers.get(c);
      if (h) return h;
    }
    return null;
  }

  /** The reserved code a claim would overlap (either way), if any: as dialled. */
  overlapping(code: string): string | null {
    for (const [c, h] of this.handlers) if (codesOverlap(code, c)) return h.serviceCode;
    return null;
  }
}
