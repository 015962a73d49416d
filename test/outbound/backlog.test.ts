// A backlog of 100,000 jobs with the provider down stays in the table with memory bounded by the hold cap; after the
// recovery the first 10,000 drain (draining all of them is a throughput question: see `npm run bench -- outbound`).
import t from 'tap';
import { openTestBackends } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';
import { backlogCase } from './backlog.js';
import { FailOnDemandProvider } from './fail-on-demand-provider.js';

const env = await openTestBackends();
t.teardown(() => env.cleanup());
const provider = await FailOnDemandProvider.start();
t.teardown(() => provider.close());

t.test(`a backlog of 100,000 with the provider down stays in the table, bounded in memory, and drains after (${backendLabel})`, (t) =>
  backlogCase(t, env, provider, { n: 100_000, drain: 10_000 }),
);
