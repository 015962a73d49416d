import type { UpstreamMo } from '../smpp/upstream/outbound.js';

/** A product's handler of USSD dialogue messages from upstreams (deliver_sm with ussd_service_op). */
export interface UssdMoHandler {
  /** Who registered it (the product's name): one registration per name. */
  name: string;
  /** Whether this handler takes the session (a service code, or every session); default every session. */
  accepts?: (mo: UpstreamMo) => boolean;
  handle(mo: UpstreamMo): void | Promise<void>;
}

/** A predicate for `accepts`: the session dials this service code (as the destination, or as the text some SMSCs send). */
export function dialsServiceCode(code: string): (mo: UpstreamMo) => boolean {
  return (mo) => mo.destination.trim() === code || mo.text.trim() === code;
}

/**
 * Where the SMS gateway hands USSD sessions from its upstreams: every product that serves USSD registers here (through
 * the SMS service it gets from `ctx.use('sms')`) and unregisters when it stops. The latest registration that accepts a
 * session takes it: products register in dependency order, so one built on another (USSD, which serves the OTP
 * code as a reserved code of its own) goes before it, and when it stops the earlier one (OTP's fallback) answers
 * its code again. A session no handler accepts is dropped (no answer; the upstream times the dialogue out).
 */
export class UssdMoHandlers {
  private readonly handlers: UssdMoHandler[] = [];

  /** Adds a handler; returns the function that removes it. A second handler under the same name is refused. */
  register(handler: UssdMoHandler): () => void {
    if (this.handlers.some((h) => h.name === handler.name)) throw new Error(`a USSD handler named ${handler.name} is already registered`);
    this.handlers.push(handler);
    return () => {
      const i = this.handlers.indexOf(handler);
      if (i >= 0) this.handlers.splice(i, 1);
    };
  }

  /** The names of the registered handlers, the one asked first first. */
  names(): string[] {
    return this.handlers.map((h) => h.name).reverse();
  }

  /** Hands the session to the latest handler that accepts it; none: dropped. */
  readonly dispatch = (mo: UpstreamMo): void | Promise<void> => {
    for (let i = this.handlers.length - 1; i >= 0; i--) {
      const h = this.handlers[i];
      if (!h.accepts || h.accepts(mo)) return h.handle(mo);
    }
  };
}
