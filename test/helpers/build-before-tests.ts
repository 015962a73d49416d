// tap's `before` step (package.json "tap"): compiles dist/ once for the run when the source changed since the last
// build, so tests that spawn the CLI run it compiled (see fresh-build.ts). A build that fails (a type error while
// working) stops nothing: the stamp stays stale and those tests run the source through tsx.
import { ensureBuilt } from './fresh-build.js';

const result = ensureBuilt();
if (typeof result === 'string') console.log(`# dist/ ${result === 'fresh' ? 'is up to date with src/' : 'built from src/'}`);
else console.log(`# dist/ could not be built; the CLI runs through tsx in this run. ${result.failed.split('\n').slice(0, 20).join('\n# ')}`);
