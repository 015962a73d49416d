import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisClient } from './redis-client.js';
import { assetPath } from '../../util/paths.js';

type Arg = string | number;
type ScriptFn = (...args: Arg[]) => Promise<unknown>;

/**
 * Every Lua script, by file name under src/store/redis/lua, with its number of KEYS (null: a variable number,
 * which the caller passes as the first argument).
 */
const SCRIPTS = {
  queuePush: { file: 'queue-push.lua', keys: 8 },
  queueLease: { file: 'queue-lease.lua', keys: 8 },
  queueAck: { file: 'queue-ack.lua', keys: 8 },
  queueRetry: { file: 'queue-retry.lua', keys: 8 },
  queueCancel: { file: 'queue-cancel.lua', keys: 8 },
  queuePeek: { file: 'queue-peek.lua', keys: 5 },
  throttleTake: { file: 'throttle-take.lua', keys: 1 },
  throttleHit: { file: 'throttle-hit.lua', keys: 1 },
  rateWindows: { file: 'rate-windows.lua', keys: null },
  otpCreate: { file: 'otp-create.lua', keys: 3 },
  otpVerify: { file: 'otp-verify.lua', keys: 2 },
  otpResend: { file: 'otp-resend.lua', keys: 1 },
  otpPhoneIndex: { file: 'otp-phone-index.lua', keys: 1 },
  cooldownFail: { file: 'cooldown-fail.lua', keys: 1 },
} as const;

export type ScriptName = keyof typeof SCRIPTS;

/** A Redis client with Ferry's scripts as commands: each call is EVALSHA, falling back to EVAL once after a script flush. */
export type ScriptedRedis = RedisClient & Record<ScriptName, ScriptFn>;

/**
 * Put before every script (on its first line, so line numbers in errors stay): the time a script goes by. Redis's
 * TIME, so that instances whose clocks differ (by seconds or minutes) agree on windows, leases and expiries; Redis 7
 * replicates a script's effects, not the script, so a script may read TIME and then write. A script takes a `now`
 * argument that is '' in production; tests pass their clock's time there to move time without waiting (scriptNow),
 * or `~ms`, a shift added to TIME (OtpStore: a test moved the service's clock, not the store's).
 */
const PRELUDE =
  "local function server_now(given) local shift = 0 if given ~= nil and given ~= '' then " +
  "if string.sub(given, 1, 1) ~= '~' then return tonumber(given) end shift = tonumber(string.sub(given, 2)) end " +
  "local t = redis.call('TIME') return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + shift end ";

/**
 * The `now` argument of the scripts: '' (the server's TIME) unless a test clock is given. Only tests give one: a
 * store's own clock (`clock`) may be skewed in production and must not decide a window, a lease or an expiry.
 */
export function scriptNow(testClock: (() => number) | undefined): () => number | '' {
  return testClock ? () => Math.floor(testClock()) : () => '';
}

let sources: Map<ScriptName, string> | null = null;

export function loadScript(file: string): string {
  return readFileSync(assetPath('store', 'redis', 'lua', file), 'utf8');
}

/** Registers the scripts on a client (once per client). */
export function defineScripts(redis: RedisClient): ScriptedRedis {
  if (!sources) {
    sources = new Map();
    for (const [name, def] of Object.entries(SCRIPTS) as [ScriptName, (typeof SCRIPTS)[ScriptName]][]) sources.set(name, PRELUDE + loadScript(def.file));
  }
  for (const [name, def] of Object.entries(SCRIPTS) as [ScriptName, (typeof SCRIPTS)[ScriptName]][]) {
    const commands = redis as unknown as Record<string, unknown>;
    if (typeof commands[name] === 'function') continue;
    if (def.keys !== null) redis.defineCommand(name, { lua: sources.get(name)!, numberOfKeys: def.keys });
    else commands[name] = variableKeysScript(redis, sources.get(name)!);
  }
  return redis as ScriptedRedis;
}

/**
 * A script whose caller passes the number of keys first, sent as EVALSHA (EVAL once after a script flush). Not a
 * defined command: for those, auto-pipelining on a Cluster groups a call by its first argument, which here is the
 * key count, so calls for different slots could share a pipeline that the Cluster then refuses; EVALSHA's keys are
 * known to ioredis and group by the first key.
 */
function variableKeysScript(redis: RedisClient, lua: string): ScriptFn {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (...args: Arg[]) => {
    try {
      return await redis.evalsha(sha, ...(args as [number, ...Arg[]]));
    } catch (err) {
      if (!(err as Error).message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(lua, ...(args as [number, ...Arg[]]));
    }
  };
}
