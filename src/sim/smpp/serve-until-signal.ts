import type { Logger } from 'pino';
import type { SimulatorStats } from './simulator.js';

/**
 * Keeps a running simulator until SIGINT or SIGTERM, logging its counters every `statsIntervalMs` (0 = never) as
 * `simulator stats` lines, which the benchmark reads. The caller closes the simulator afterwards.
 */
export async function serveUntilSignal(sim: { readonly stats: SimulatorStats }, logger: Logger, statsIntervalMs: number): Promise<void> {
  const statsTimer = statsIntervalMs > 0 ? setInterval(() => logger.info({ stats: sim.stats }, 'simulator stats'), statsIntervalMs) : undefined;
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      logger.info({ signal }, 'stopping simulator');
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  clearInterval(statsTimer);
}
