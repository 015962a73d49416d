/**
 * The outbound bench's provider, in its own process so its CPU is counted apart: the contract test's loopback
 * provider, answering every request at once (200 with an id). Prints `port <n>` once listening; runs until killed.
 */
import { FailOnDemandProvider } from '../../../test/outbound/fail-on-demand-provider.js';

const provider = await FailOnDemandProvider.start();
process.stdout.write(`port ${new URL(provider.url).port}\n`);
process.on('SIGTERM', () => void provider.close().then(() => process.exit(0)));
