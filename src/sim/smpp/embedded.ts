import { randomBytes } from 'node:crypto';
import { startSimulator, type SimulatorLogger, type SimulatorOptions, type SmscSimulator } from './simulator.js';

/** Said in the log and on /readyz while the embedded upstream is in use. */
export const EMBEDDED_UPSTREAM_WARNING =
  'NO UPSTREAM CONFIGURED: messages go to the embedded SMSC simulator and NOTHING LEAVES THIS MACHINE';

export interface EmbeddedUpstream {
  host: string;
  port: number;
  systemId: string;
  password: string;
  /** For /readyz and logs. */
  warning: string;
  simulator: SmscSimulator;
  close(): Promise<void>;
}

/**
 * Starts a simulated upstream on 127.0.0.1 for `ferry start` with no upstream configured, so the first send works
 * end to end. Credentials are random per start; the warning is logged loudly.
 */
export async function startEmbeddedUpstream(
  options: {
    logger?: SimulatorLogger;
    behaviour?: Omit<SimulatorOptions, 'host' | 'systemId' | 'password' | 'logger'>;
    /** Log the loud warning (default true); false when real upstreams exist and the operator enabled it by name. */
    warn?: boolean;
  } = {},
): Promise<EmbeddedUpstream> {
  const systemId = 'ferry-embedded';
  const password = randomBytes(4).toString('hex'); // password is at most 8 characters in SMPP v3.4
  const simulator = await startSimulator({
    receiptDelayMs: 200,
    ...options.behaviour,
    host: '127.0.0.1',
    systemId,
    password,
    logger: options.logger,
  });
  if (options.warn !== false) options.logger?.warn({ port: simulator.port, embeddedUpstream: true }, EMBEDDED_UPSTREAM_WARNING);
  return {
    host: '127.0.0.1',
    port: simulator.port,
    systemId,
    password,
    warning: EMBEDDED_UPSTREAM_WARNING,
    simulator,
    close: () => simulator.close(),
  };
}
