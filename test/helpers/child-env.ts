/**
 * The environment for a process a test spawns (the CLI, a daemon, a crash child): this process's, plus `extra`. tap
 * puts its process-tracking loader (@tapjs/processinfo) into NODE_OPTIONS so that every descendant records itself
 * for coverage; with coverage disabled (package.json "tap") that record is never read, and the loader costs each
 * child about as much CPU as the CLI's own start-up. It is left out then, and only then.
 */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (process.env.TAP_DISABLE_COVERAGE === '1' && env.NODE_OPTIONS) {
    const kept = env.NODE_OPTIONS.split(/\s+/).filter((o) => o && !o.includes('@tapjs/processinfo'));
    if (kept.length) env.NODE_OPTIONS = kept.join(' ');
    else delete env.NODE_OPTIONS;
  }
  return env;
}
